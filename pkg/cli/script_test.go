package cli_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// These tests run the built binary the way a CI script or a runbook does: its own process, stdin
// not a terminal (or closed), stdout redirected, and only the exit code to go by.

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// binary builds cmd/kubectl-llm once for the whole test binary.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var dir string
		if dir, buildErr = os.MkdirTemp("", "kubectl-llm-bin-"); buildErr == nil {
			builtBinary, buildErr = testenv.BuildBinary(dir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBinary
}

// stdoutTo is where a script sends the binary's standard output.
type stdoutTo string

const (
	toDevNull stdoutTo = "stdout-devnull"
	toPipe    stdoutTo = "stdout-pipe"
	toFile    stdoutTo = "stdout-file"
)

// stdinFrom is what a script leaves on the binary's standard input.
type stdinFrom string

const (
	fromDevNull stdinFrom = "stdin-devnull"
	stdinClosed stdinFrom = "stdin-closed"
)

var (
	allStdouts = []stdoutTo{toDevNull, toPipe, toFile}
	allStdins  = []stdinFrom{fromDevNull, stdinClosed}
)

// scriptProcess is the binary started from a script, with what it printed so far.
type scriptProcess struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	err    *syncBuffer
	file   string
	result chan result
}

// startScript starts `kubectl-llm --kubeconfig K args... <stdin >stdout` through /bin/sh, so that
// "stdin closed" really is a closed descriptor 0, as `<&-` leaves it. Without a kubeconfig path
// the binary runs on a machine that has no cluster configured at all.
func startScript(ctx context.Context, t *testing.T, in stdinFrom, out stdoutTo, kubeconfigPath string, args ...string) *scriptProcess {
	t.Helper()
	redirect := ""
	if in == stdinClosed {
		redirect = " <&-"
	}
	argv := append([]string{binary(t), "--kubeconfig", kubeconfigPath}, args...)
	if kubeconfigPath == "" {
		argv = append([]string{binary(t)}, args...)
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec "$0" "$@"` + redirect}, argv...)...)
	if kubeconfigPath == "" {
		cmd.Env = noClusterEnv(t)
	}
	cmd.WaitDelay = 5 * time.Second
	p := &scriptProcess{cmd: cmd, out: &syncBuffer{}, err: &syncBuffer{}, result: make(chan result, 1)}
	cmd.Stderr = p.err
	switch out {
	case toDevNull:
		devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { devNull.Close() })
		cmd.Stdout = devNull
	case toPipe:
		cmd.Stdout = p.out // os/exec hands the process the write end of a pipe
	case toFile:
		p.file = filepath.Join(t.TempDir(), "stdout")
		f, err := os.Create(p.file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			code = -1
		}
		p.result <- result{Out: p.stdout(), Err: p.err.String(), Code: code}
	}()
	return p
}

// noClusterEnv is the environment of a machine with no kubeconfig (no $KUBECONFIG, an empty
// home) and not inside a pod.
func noClusterEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+t.TempDir())
}

// stdout is what the process printed so far (nothing for /dev/null).
func (p *scriptProcess) stdout() string {
	if p.file != "" {
		b, _ := os.ReadFile(p.file)
		return string(b)
	}
	return p.out.String()
}

// script runs the binary against the envtest cluster until it exits.
func script(t *testing.T, in stdinFrom, out stdoutTo, args ...string) result {
	t.Helper()
	return scriptAt(t, kubeconfig, in, out, args...)
}

// scriptAt runs the binary with a kubeconfig of its own until it exits.
func scriptAt(t *testing.T, kubeconfigPath string, in stdinFrom, out stdoutTo, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return <-startScript(ctx, t, in, out, kubeconfigPath, args...).result
}

// eachRedirection runs f for every stdin and stdout a script may give the binary.
func eachRedirection(t *testing.T, f func(t *testing.T, in stdinFrom, out stdoutTo)) {
	binary(t) // built before the subtests' clocks start
	for _, in := range allStdins {
		for _, out := range allStdouts {
			t.Run(string(in)+"/"+string(out), func(t *testing.T) {
				t.Parallel()
				f(t, in, out)
			})
		}
	}
}

// wantPlain checks that what a script redirected holds the plain lines (and never the live
// view's escape sequences); /dev/null keeps nothing to check.
func wantPlain(t *testing.T, out stdoutTo, stdout, want string) {
	t.Helper()
	if out == toDevNull {
		return
	}
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout does not hold %q:\n%s", want, stdout)
	}
	if strings.Contains(stdout, "\x1b[") {
		t.Errorf("stdout holds terminal escape sequences:\n%q", stdout)
	}
}

func TestRolloutStatusFromAScript(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-rollout-status-")
	now := time.Now()
	done := seedServing(t, ns, fixtures.Serving("done", ns).Replicas(2))
	writeStatus(t, done, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: conditions(now, available, complete, notDegraded)})
	rolling := seedServing(t, ns, fixtures.Serving("rolling", ns).Replicas(2))
	writeStatus(t, rolling, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, rollingOut, notDegraded)})

	eachRedirection(t, func(t *testing.T, in stdinFrom, out stdoutTo) {
		r := script(t, in, out, "-n", ns, "rollout", "status", "done")
		expectCode(t, r, 0)
		wantPlain(t, out, r.Out, "serving \"done\" successfully rolled out")

		// Not finished: the wait runs (no live view without a terminal) until --timeout.
		r = script(t, in, out, "-n", ns, "rollout", "status", "rolling", "--timeout", "2s")
		expectCode(t, r, cli.ExitTimedOut)
		wantPlain(t, out, r.Out, "Waiting for rollout to finish: 1 of 2 groups updated...")
		if !strings.HasPrefix(r.Err, `error: timed out after 2s waiting for the rollout of serving "rolling"`) {
			t.Errorf("stderr %q, want the timeout", r.Err)
		}
	})
}

func TestWatchFromAScript(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-watch-")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(1).GroupSize(2))
	now := time.Now()
	seedPod(t, ns, 0, fixtures.Pod("qwen", 0, 0, "qwen-r1").NotReady(), false).writeStatus(t, now, time.Minute)
	seedPod(t, ns, 0, fixtures.Pod("qwen", 0, 1, "qwen-r1"), false).writeStatus(t, now, time.Minute)

	eachRedirection(t, func(t *testing.T, in stdinFrom, out stdoutTo) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := startScript(ctx, t, in, out, kubeconfig, "-n", ns, "watch", "qwen")
		// The plain view runs until it is stopped: it must still run after printing (to
		// /dev/null: after a while), not end with an error.
		deadline := time.Now().Add(30 * time.Second)
		if out == toDevNull {
			deadline = time.Now().Add(3 * time.Second)
		}
		for time.Now().Before(deadline) && (out == toDevNull || !strings.Contains(p.stdout(), "group 0 worker 1")) {
			select {
			case r := <-p.result:
				t.Fatalf("watch ended by itself with %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Out, r.Err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		cancel()
		r := <-p.result
		wantPlain(t, out, r.Out, "group 0 worker 1")
		if r.Err != "" {
			t.Errorf("stderr %q", r.Err)
		}
	})
}

// The GitOps render of install's own help works offline, exactly as written there.
func TestInstallHelpRenderWorksWithoutACluster(t *testing.T) {
	help := script(t, fromDevNull, toPipe, "install", "--help")
	expectCode(t, help, 0)
	var example []string
	for _, line := range strings.Split(help.Out, "\n") {
		if strings.Contains(line, "--dry-run=client") && strings.HasPrefix(strings.TrimSpace(line), "kubectl llm install") {
			cmdline, _, _ := strings.Cut(strings.TrimSpace(line), ">")
			example = strings.Fields(cmdline)[2:] // drop "kubectl llm"
		}
	}
	if len(example) == 0 {
		t.Fatalf("install --help has no --dry-run=client example:\n%s", help.Out)
	}
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(unreachable, &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "token"}); err != nil {
		t.Fatal(err)
	}
	external := script(t, fromDevNull, toPipe, "install", "--dry-run=client", "-o", "yaml", "--lws=external")
	expectCode(t, external, 0)

	for name, kubeconfigPath := range map[string]string{"no kubeconfig": "", "unreachable cluster": unreachable} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := <-startScript(ctx, t, fromDevNull, toFile, kubeconfigPath, example...).result
			expectCode(t, r, 0)
			if r.Out != external.Out {
				t.Errorf("the offline render of %v is not the --lws=external render", example)
			}
			if strings.Contains(r.Out, "leaderworkersets.leaderworkerset.x-k8s.io") {
				t.Error("the offline render includes the LeaderWorkerSet CRD")
			}
			want := "--dry-run=client with --lws=auto renders --lws=external (LeaderWorkerSet installed in the cluster); pass --lws=embedded for the operator to host LWS.\n"
			if r.Err != want {
				t.Errorf("stderr %q, want %q", r.Err, want)
			}
		})
	}
	embedded := script(t, fromDevNull, toPipe, "install", "--dry-run=client", "-o", "yaml", "--lws=embedded")
	expectCode(t, embedded, 0)
	if !strings.Contains(embedded.Out, "name: leaderworkersets.leaderworkerset.x-k8s.io") {
		t.Error("--lws=embedded does not render the LeaderWorkerSet CRD")
	}
}

// On a terminal the live view does open: stdin and stdout a pseudo-terminal, watch takes the
// alternate screen and quits on q. With stdout a terminal but stdin not one (cron, ssh -n),
// it prints the plain lines.
func TestTheLiveViewOpensOnlyWithStdinAndStdoutATerminal(t *testing.T) {
	ns := testenv.Namespace(t, env.Client, "script-terminal-")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(1).GroupSize(2))
	now := time.Now()
	seedPod(t, ns, 0, fixtures.Pod("qwen", 0, 0, "qwen-r1"), false).writeStatus(t, now, time.Minute)
	seedPod(t, ns, 0, fixtures.Pod("qwen", 0, 1, "qwen-r1"), false).writeStatus(t, now, time.Minute)
	const altScreen = "\x1b[?1049h"
	binary(t) // built before the clocks start

	for _, stdinTerminal := range []bool{true, false} {
		t.Run(map[bool]string{true: "stdin a terminal", false: "stdin /dev/null"}[stdinTerminal], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			window, tty := testenv.OpenPTY(t)
			cmd := exec.CommandContext(ctx, binary(t), "--kubeconfig", kubeconfig, "-n", ns, "watch", "qwen")
			var errOut syncBuffer
			cmd.Stdout, cmd.Stderr = tty, &errOut
			if stdinTerminal {
				cmd.Stdin = tty
			}
			screen := &syncBuffer{}
			go func() { _, _ = io.Copy(screen, window) }() // ends when the window is closed
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			want := "group 0 worker 1: Ready" // a plain line
			if stdinTerminal {
				want = altScreen
			}
			testenv.Eventually(t, 30*time.Second, "the watch to draw "+strconv.Quote(want), func() (bool, error) {
				select {
				case err := <-exited:
					t.Fatalf("watch ended (%v) before drawing; stderr %q, screen %q", err, errOut.String(), screen.String())
				default:
				}
				return strings.Contains(screen.String(), want), nil
			})
			if !stdinTerminal {
				if strings.Contains(screen.String(), altScreen) {
					t.Errorf("with stdin /dev/null the live view opened:\n%q", screen.String())
				}
				return
			}
			time.Sleep(500 * time.Millisecond) // let the view read its first frame before the key
			if _, err := window.Write([]byte("q")); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("q ended the live view with %v; stderr %q", err, errOut.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("q did not end the live view; screen %q", screen.String())
			}
		})
	}
}

// A serving renders offline too: deploy --dry-run=client asks no cluster.
func TestDeployDryRunRendersWithoutACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := <-startScript(ctx, t, stdinClosed, toPipe, "", "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B", "--dry-run=client", "-o", "yaml").result
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.Out, "apiVersion: serving.kubectl-llm.dev/v1alpha1\nkind: ModelServing\n") || r.Err != "" {
		t.Errorf("stdout %q, stderr %q", r.Out, r.Err)
	}
}
