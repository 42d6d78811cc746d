package cli_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files and docs/commands.md")

var (
	env        *testenv.Env
	kubeconfig string
)

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	var cleanup func()
	kubeconfig, cleanup, err = env.TempKubeconfig("kubectl-llm-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	cleanup()
	os.Exit(code)
}

// result is what one invocation printed and returned.
type result struct {
	Out, Err string
	Code     int
}

// run executes the real command tree with --kubeconfig for the envtest cluster and a fixed clock.
func run(t *testing.T, now time.Time, args ...string) result {
	t.Helper()
	return runCtx(context.Background(), t, now, "", args...)
}

func runCtx(ctx context.Context, t *testing.T, now time.Time, stdin string, args ...string) result {
	t.Helper()
	return runTo(ctx, &syncBuffer{}, now, stdin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// syncBuffer is a buffer a test may read while a command or view writes to it.
type syncBuffer = testenv.SyncBuffer

// start runs a command in the background (until it ends or ctx does) and returns its stdout as it
// is written, and its result when it ends.
func start(ctx context.Context, now time.Time, args ...string) (*syncBuffer, <-chan result) {
	out := &syncBuffer{}
	done := make(chan result, 1)
	go func() { done <- runTo(ctx, out, now, "", append([]string{"--kubeconfig", kubeconfig}, args...)...) }()
	return out, done
}

// waitFor waits until the command printed want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not print %q; it printed:\n%s", want, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runTo(ctx context.Context, out *syncBuffer, now time.Time, stdin string, args ...string) result {
	var errOut syncBuffer
	o := &cli.RootOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		Streams:     genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: out, ErrOut: &errOut},
		Clock:       clocktesting.NewFakePassiveClock(now),
	}
	cmd := cli.NewRootCommandWith(o)
	cmd.SetArgs(args)
	code := cli.Execute(ctx, cmd, &errOut)
	return result{Out: out.String(), Err: errOut.String(), Code: code}
}

// golden compares got with testdata/<name>.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (run go test ./pkg/cli/ -update to create it): %v", path, err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); refresh with go test ./pkg/cli/ -update if intended:\n%s", path, diff)
	}
}

// namespace creates a namespace with a fixed name, so golden output can show it.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// create creates objects, failing the test on error.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// clockAfter is a fixed "now" one hour after the latest time the API server stamped on the
// objects: ages print as 60m, however long the test took to get here.
func clockAfter(t *testing.T, objs ...client.Object) time.Time {
	t.Helper()
	var latest time.Time
	for _, o := range objs {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if c := o.GetCreationTimestamp().Time; c.After(latest) {
			latest = c
		}
		if d := o.GetDeletionTimestamp(); d != nil && d.After(latest) {
			latest = d.Time
		}
	}
	return latest.Add(time.Hour)
}

// getServing reads a serving back.
func getServing(t *testing.T, ns, name string) *v1.ModelServing {
	t.Helper()
	ms := &v1.ModelServing{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// expectCode fails the test when an invocation did not exit with code.
func expectCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Out, r.Err)
	}
}
