package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Exit codes besides 0 (ok) and 1 (error).
const (
	// ExitRolloutFailed: the rollout cannot finish without help (progress deadline exceeded, or a
	// spec the operator cannot serve).
	ExitRolloutFailed = 2
	// ExitTimedOut: a wait ended at its --timeout before what it waited for happened (rollout
	// status: the rollout finished; install: the CRDs established; uninstall: the servings gone).
	ExitTimedOut = 3
)

// exitError is an error with its own exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// timedOut gives a failed wait the exit code of a timeout when the wait ran out of time (its
// error is wait.Interrupted), and leaves other errors (the API refused, say) at 1.
func timedOut(waitErr, err error) error {
	if wait.Interrupted(waitErr) {
		return &exitError{code: ExitTimedOut, err: err}
	}
	return err
}

// errCRDMissing is what a command says when the cluster does not know ModelServing.
var errCRDMissing = errors.New("the ModelServing API (modelservings.serving.kubectl-llm.dev/v1alpha1) is not installed in this cluster: run kubectl llm install")

// explain turns the errors a person can act on into sentences that say what to do. API refusals
// (invalid fields, forbidden) pass through: their message already names the field or the verb.
func explain(err error, host string) error {
	if err == nil {
		return nil
	}
	if meta.IsNoMatchError(err) || (apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource")) {
		return errCRDMissing
	}
	if reach := unreachable(err, host); reach != nil {
		return reach
	}
	return err
}

// unreachable is what to say when err means the cluster did not answer; nil for any other error.
func unreachable(err error, host string) error {
	var uerr *url.Error
	var nerr net.Error
	if err == nil || !(errors.As(err, &uerr) || errors.As(err, &nerr) || errors.Is(err, syscall.ECONNREFUSED)) {
		return nil
	}
	where := "the cluster"
	if host != "" {
		where = "the cluster at " + host
	}
	return fmt.Errorf("cannot reach %s: %w (is it running? check --kubeconfig, --context and --server)", where, err)
}
