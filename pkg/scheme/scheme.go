// Package scheme owns the one runtime.Scheme kubectl-llm's clients use: the client-go types,
// the ModelServing API and LeaderWorkerSet. The operator's manager and the CLI's client are both
// built on it, so the CLI need not import the operator for it.
//
// It imports only API packages; never pkg/operator, pkg/status, pkg/cli or pkg/tui.
package scheme

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// New is a scheme with every type kubectl-llm reads or writes.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, lwsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registration: cannot fail
		}
	}
	return s
}

// Shared is one scheme of New for the whole process, built at its first use, for readers that
// never register anything in it (printers, clients). A scheme of every client-go type costs half
// a megabyte; a fresh one per command with -o made every start of the binary, the operator's
// too, build fifteen.
var Shared = sync.OnceValue(New)
