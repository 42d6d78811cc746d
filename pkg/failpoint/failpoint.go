// Package failpoint stops the operator process at a named point of a code path, for the fault
// suite (test/e2e): a crash between two writes that a kill at a random moment would rarely hit.
// It is compiled in and inert unless the environment names a point:
//
//	KUBECTL_LLM_FAILPOINT=after-revision                 # the first serving to get there
//	KUBECTL_LLM_FAILPOINT=after-revision@team-a/qwen     # only serving team-a/qwen
//
// The process then exits at once with ExitCode (no deferred function, no lease release: as a
// SIGKILL would leave it). It imports nothing of kubectl-llm.
package failpoint

import (
	"fmt"
	"io"
	"strings"
)

// EnvVar names the point to stop at.
const EnvVar = "KUBECTL_LLM_FAILPOINT"

// ExitCode is the exit status of a process stopped at a failpoint.
const ExitCode = 86

// Set is the failpoint a process was started with; the zero value is inert.
type Set struct {
	point, scope string
	exit         func(int)
	log          io.Writer
}

// Parse reads the value of EnvVar ("" is inert). exit ends the process (os.Exit) and log says
// which point was reached before it does.
func Parse(value string, exit func(int), log io.Writer) Set {
	point, scope, _ := strings.Cut(strings.TrimSpace(value), "@")
	if point == "" {
		return Set{}
	}
	return Set{point: point, scope: scope, exit: exit, log: log}
}

// Active reports whether a point is set.
func (s Set) Active() bool { return s.point != "" }

// Hit stops the process when point is the one set and key ("namespace/name") is in its scope.
func (s Set) Hit(point, key string) {
	if s.point == "" || s.point != point || (s.scope != "" && s.scope != key) {
		return
	}
	if s.log != nil {
		fmt.Fprintf(s.log, "failpoint %s reached for %s: exiting with status %d\n", point, key, ExitCode)
	}
	s.exit(ExitCode)
}
