package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

func TestVersionShowsTheAPIsOfTheCluster(t *testing.T) {
	r := run(t, time.Now(), "version")
	expectCode(t, r, 0)
	golden(t, "version", r.Out)
	r = run(t, time.Now(), "version", "--client")
	expectCode(t, r, 0)
	if r.Out != "Client Version: dev (commit none, built unknown)\n" {
		t.Errorf("version --client printed %q", r.Out)
	}
}

// TestDeployWarnsWhenLWSIsMissing hides the LeaderWorkerSet CRD from the plugin's client.
func TestDeployWarnsWhenLWSIsMissing(t *testing.T) {
	ns := namespace(t, "deploy-no-lws")
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(base, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if key.Name == "leaderworkersets.leaderworkerset.x-k8s.io" {
			return apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, key.Name)
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	var out, errOut bytes.Buffer
	o := &cli.RootOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), Client: c,
		Streams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, Clock: clocktesting.NewFakePassiveClock(time.Now())}
	cmd := cli.NewRootCommandWith(o)
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B"})
	if code := cli.Execute(context.Background(), cmd, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "Warning: the LeaderWorkerSet API is not installed") || out.String() != "modelserving.serving.kubectl-llm.dev/qwen created\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
	// With LWS installed (the real client) there is no warning.
	r := run(t, time.Now(), "-n", ns, "deploy", "qwen", "--model", "Qwen/Qwen3-0.6B")
	expectCode(t, r, 0)
	if r.Err != "" {
		t.Errorf("warning with LWS installed: %q", r.Err)
	}
}
