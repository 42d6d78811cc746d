package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
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

// clientAndNamespace resolves the client and the namespace every command works in.
func (o *RootOptions) clientAndNamespace() (client.WithWatch, string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("read the namespace from the kubeconfig: %w", err)
	}
	if o.Client != nil {
		return o.Client, ns, nil
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no cluster configured: %w (set --kubeconfig, KUBECONFIG or --server)", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", explain(err, cfg.Host)
	}
	o.Client = c
	return c, ns, nil
}

// host is the API server the flags point at, for error messages.
func (o *RootOptions) host() string {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return ""
	}
	return cfg.Host
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

// getServing fetches a serving; when it does not exist the error names close names in the namespace.
func getServing(ctx context.Context, c client.Client, ns, name, host string) (*v1.ModelServing, error) {
	ms := &v1.ModelServing{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ms)
	if apierrors.IsNotFound(err) {
		return nil, notFound(ctx, c, ns, name, host)
	}
	if err != nil {
		return nil, explain(err, host)
	}
	return ms, nil
}

func notFound(ctx context.Context, c client.Client, ns, name, host string) error {
	items, _, err := listServings(ctx, c, client.InNamespace(ns))
	if err != nil {
		return explain(err, host)
	}
	var names []string
	for _, ms := range items {
		names = append(names, ms.Name)
	}
	msg := fmt.Sprintf("modelserving %q not found in namespace %q", name, ns)
	if close := closeNames(name, names); len(close) > 0 {
		return fmt.Errorf("%s; did you mean %s?", msg, strings.Join(close, ", "))
	}
	if len(names) == 0 {
		return fmt.Errorf("%s, which has no servings (use -n NAMESPACE or -A with get)", msg)
	}
	return fmt.Errorf("%s (kubectl llm get lists the %d there)", msg, len(names))
}

// closeNames are the names within a small edit distance of name, or sharing a prefix with it.
func closeNames(name string, names []string) []string {
	type scored struct {
		name string
		d    int
	}
	var out []scored
	for _, n := range names {
		d := editDistance(name, n)
		limit := max(2, len(name)/3)
		if d <= limit || strings.HasPrefix(n, name) || strings.HasPrefix(name, n) {
			out = append(out, scored{n, d})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].name < out[j].name
	})
	var names2 []string
	for i, s := range out {
		if i == 3 {
			break
		}
		names2 = append(names2, s.name)
	}
	return names2
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// patchServing reads the serving, lets mutate change a copy and sends the difference as a merge
// patch with our field manager, guarded by the resourceVersion it read (retried on conflict), so
// a decision made from the read state (a partition from replicas, say) is never applied to a
// different state.
func patchServing(ctx context.Context, c client.Client, ns, name, host string, mutate func(*v1.ModelServing) error) (*v1.ModelServing, error) {
	var out *v1.ModelServing
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ms, err := getServing(ctx, c, ns, name, host)
		if err != nil {
			return err
		}
		base := ms.DeepCopy()
		if err := mutate(ms); err != nil {
			return err
		}
		if err := c.Patch(ctx, ms, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(v1.FieldManager)); err != nil {
			return err
		}
		out = ms
		return nil
	})
	return out, explain(err, host)
}

// completeServingNames completes the first argument with the servings of the namespace.
func completeServingNames(o *RootOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, ns, err := o.clientAndNamespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		items, _, err := listServings(cmd.Context(), c, client.InNamespace(ns))
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []cobra.Completion
		for _, ms := range items {
			if strings.HasPrefix(ms.Name, toComplete) {
				names = append(names, ms.Name)
			}
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// runE wires the kubectl pattern: Complete, Validate, Run with the command's context.
func runE(complete func(cmd *cobra.Command, args []string) error, validate func() error, run func(ctx context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := complete(cmd, args); err != nil {
			return err
		}
		if err := validate(); err != nil {
			return err
		}
		return run(cmd.Context())
	}
}

// newTable is an aligned table writer like kubectl's: three spaces between columns.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0) }

// age prints how long ago t was, like kubectl's AGE column.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// colors paints words only on a terminal and only without --no-color or NO_COLOR.
type colors struct{ on bool }

// newColors are the colours for what a command writes to w (its Out or its ErrOut).
func newColors(o *RootOptions, w io.Writer) colors {
	if o.NoColor || os.Getenv("NO_COLOR") != "" {
		return colors{}
	}
	return colors{on: isTerminal(w)}
}

func (c colors) paint(code, s string) string {
	if !c.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// state colours a state word: green when good, yellow while waiting, red when failing.
func (c colors) state(s string) string {
	switch s {
	case "Ready", "True", "ok", "current", "Normal":
		return c.paint("32", s)
	case "Failed", "Degraded", "Failing", "FAIL", "Warning", "Missing":
		return c.paint("31", s)
	case "":
		return s
	default:
		return c.paint("33", s)
	}
}

// qualified is the kubectl-style name of a serving in messages: modelserving.serving.kubectl-llm.dev/NAME.
func qualified(name string) string { return "modelserving.serving.kubectl-llm.dev/" + name }

// exactlyOneName checks the NAME argument of the commands that act on one serving.
func exactlyOneName(args []string, usage string) (string, error) {
	switch len(args) {
	case 1:
		if args[0] == "" {
			return "", fmt.Errorf("NAME must not be empty: %s", usage)
		}
		return args[0], nil
	case 0:
		return "", fmt.Errorf("NAME is required: %s", usage)
	default:
		return "", fmt.Errorf("expected one NAME, got %d arguments (%s): %s", len(args), strings.Join(args, " "), usage)
	}
}
