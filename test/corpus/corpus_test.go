// Package corpus runs the bad-input corpus of issue 11 against a real API server with the
// ModelServing CRD and the operator running: every invalid spec or command line has one exact
// outcome (refused at admission naming the field, refused by the CLI naming the flag, or a
// Degraded reason naming the field), nothing of it is applied, and a neighbouring serving in the
// same namespace is not affected.
package corpus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

var (
	env        *testenv.Env
	kubeconfig string
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.DPanicLevel)))
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	var cleanup func()
	kubeconfig, cleanup, err = env.TempKubeconfig("kubectl-llm-corpus-")
	ctx, cancel := context.WithCancel(context.Background())
	var done chan struct{}
	if err == nil {
		opts := operator.DefaultOptions()
		opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElect, opts.LWS = "0", "0", false, operator.LWSExternal
		opts.Registry = prometheus.NewRegistry()
		var mgr ctrl.Manager
		if mgr, err = operator.NewManager(ctx, env.Config, opts); err == nil {
			done = make(chan struct{})
			go func() { defer close(done); _ = mgr.Start(ctx) }()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "corpus setup:", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	<-done
	_ = env.Stop()
	cleanup()
	os.Exit(code)
}

// outcome is how a bad input must be refused.
type outcome int

const (
	admission  outcome = iota // the API server refuses it; the message names the field
	cliRefusal                // the plugin refuses the command line; the message names the flag
	degraded                  // stored, then Degraded with a reason, the message naming the field
)

// badInput is one entry of the corpus: a spec (with its name) or a command line.
type badInput struct {
	name   string
	object string   // the serving's name; a spec case sets spec, a command line args
	spec   spec     // applied as is (through unstructured: any JSON the API server may get)
	args   []string // a kubectl llm command line (-n is added)
	want   outcome
	reason string // for degraded: the Degraded reason
	says   string // what the message must contain: the field or flag, and what is wrong
}

type spec = map[string]any

func with(base spec, path string, value any) spec {
	s := deepCopy(base)
	keys := strings.Split(path, ".")
	m := s
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
	return s
}

func deepCopy(s spec) spec {
	raw, _ := json.Marshal(s)
	out := spec{}
	_ = json.Unmarshal(raw, &out)
	return out
}

// corpus is every bad input. Names are distinct so no case can hide another's object.
func corpus() []badInput {
	ok := spec{"model": "Qwen/Qwen3-0.6B"}
	at := func(name, path string, value any, says string) badInput {
		return badInput{name: name, spec: with(ok, path, value), want: admission, says: says}
	}
	invalid := func(name, path string, value any, says string) badInput {
		return badInput{name: name, spec: with(ok, path, value), want: degraded, reason: v1.ReasonInvalidSpec, says: says}
	}
	deploy := func(name string, want outcome, says string, args ...string) badInput {
		return badInput{name: name, args: args, want: want, says: says}
	}
	bigArg := strings.Repeat("x", 900*1024) // fits a ModelServing once; the LWS carries it twice
	cases := []badInput{
		// Names: they must fit every object and label made from them.
		{name: "name of 48 characters", object: strings.Repeat("n", 48), spec: ok, want: admission, says: "metadata.name must be at most 47 characters"},
		{name: "name in upper case", object: "Qwen", spec: ok, want: admission, says: "metadata.name must be a DNS-1035 label"},
		{name: "name starting with a digit", object: "3b", spec: ok, want: admission, says: "metadata.name must be a DNS-1035 label"},
		{name: "name with a dot", object: "qwen.small", spec: ok, want: admission, says: "metadata.name must be a DNS-1035 label"},
		{name: "name ending in -<number>", object: "llama-3", spec: ok, want: admission, says: "metadata.name must not end in -<number>"},
		{name: "name ending in -api", object: "qwen-api", spec: ok, want: admission, says: "metadata.name must not end in -api"},
		// The model.
		at("empty model", "model", "", "spec.model must name the model to serve"),
		at("blank model", "model", "   ", "spec.model must name the model to serve"),
		{name: "missing model", spec: spec{"replicas": 1}, want: admission, says: "spec.model: Required value"},
		at("model starting with -", "model", "--trust-remote-code", "spec.model must not start with '-'"),
		at("model with a space", "model", "Qwen/Qwen3 --x", "spec.model must not contain whitespace"),
		at("model with a line break", "model", "Qwen\nrm -rf /", "spec.model must not contain whitespace"),
		at("model of 600 characters", "model", strings.Repeat("m", 600), "spec.model: Too long"),
		// The engine.
		at("unknown engine", "engine.type", "tgi", `spec.engine.type: Unsupported value: "tgi"`),
		at("custom engine without an image", "engine.type", "custom", "spec.engine.image is required when spec.engine.type is custom"),
		at("port 0", "engine.port", 0, "spec.engine.port must be a TCP port between 1 and 65535"),
		at("port 70000", "engine.port", 70000, "spec.engine.port must be a TCP port between 1 and 65535"),
		at("image of 600 characters", "engine.image", strings.Repeat("i", 600), "spec.engine.image: Too long"),
		// Counts.
		at("negative replicas", "replicas", -1, "spec.replicas is the number of groups and must be between 0 and 1000"),
		at("1001 replicas", "replicas", 1001, "spec.replicas is the number of groups and must be between 0 and 1000"),
		at("replicas beyond int32", "replicas", int64(99999999999), "spec.replicas is the number of groups and must be between 0 and 1000"),
		at("group size 0", "groupSize", 0, "spec.groupSize is the number of pods per group (leader + workers) and must be between 1 and 64"),
		at("group size 65", "groupSize", 65, "spec.groupSize is the number of pods per group (leader + workers) and must be between 1 and 64"),
		at("negative gpus", "resources.gpus", -1, "spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64"),
		at("65 gpus per pod", "resources.gpus", 65, "spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64"),
		at("gpus beyond int32", "resources.gpus", int64(99999999999), "spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64"),
		at("half a gpu", "resources.gpus", 0.5, "spec.resources.gpus: Invalid value"),
		// Quantities.
		at("cpu 1e400", "resources.cpu", "1e400", "spec.resources.cpu must be a positive CPU quantity of at most 4096"),
		at("negative cpu", "resources.cpu", "-1", "spec.resources.cpu must be a positive CPU quantity"),
		at("zero cpu", "resources.cpu", 0, "spec.resources.cpu must be a positive CPU quantity"),
		at("memory 1e400", "resources.memory", "1e400", "spec.resources.memory must be a positive memory quantity of at most 64Ti"),
		at("memory not a quantity", "resources.memory", "lots", "spec.resources.memory"),
		at("negative shared memory", "weights.sharedMemory", "-1Gi", "spec.weights.sharedMemory must be a positive memory quantity"),
		// Durations.
		at("startup timeout beyond time.Duration", "readiness.startupTimeout", "99999999999h", "spec.readiness.startupTimeout must be a positive duration of at most 24h"),
		at("startup timeout of 0s", "readiness.startupTimeout", "0s", "spec.readiness.startupTimeout must be a positive duration"),
		at("startup timeout not a duration", "readiness.startupTimeout", "soon", "spec.readiness.startupTimeout must be a positive duration"),
		at("startup timeout of 25h", "readiness.startupTimeout", "25h", "spec.readiness.startupTimeout must be a positive duration of at most 24h"),
		at("progress deadline of 169h", "rollout.progressDeadline", "169h", "spec.rollout.progressDeadline must be a positive duration of at most 168h"),
		at("negative progress deadline", "rollout.progressDeadline", "-5m", "spec.rollout.progressDeadline must be a positive duration"),
		at("progress deadline in ns beyond int64", "rollout.progressDeadline", "99999999999999999999ns", "spec.rollout.progressDeadline must be a positive duration"),
		// Rollout.
		at("surge over 100%", "rollout.maxSurge", "101%", "spec.rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage between 0% and 100%"),
		at("surge of 1001 groups", "rollout.maxSurge", 1001, "spec.rollout.maxSurge must be a number of groups between 0 and 1000"),
		at("unavailable 250%", "rollout.maxUnavailable", "250%", "spec.rollout.maxUnavailable must be a number of groups between 0 and 1000 or a percentage between 0% and 100%"),
		at("negative unavailable", "rollout.maxUnavailable", -1, "spec.rollout.maxUnavailable must be a number of groups between 0 and 1000"),
		{name: "surge and unavailable both 0", spec: with(with(ok, "rollout.maxSurge", 0), "rollout.maxUnavailable", 0), want: admission,
			says: "spec.rollout.maxSurge and spec.rollout.maxUnavailable cannot both be 0"},
		{name: "recreate with a surge", spec: with(with(ok, "rollout.strategy", "Recreate"), "rollout.maxSurge", 1), want: admission,
			says: "spec.rollout.maxSurge must be 0 with strategy Recreate"},
		at("negative partition", "rollout.partition", -1, "spec.rollout.partition must be between 0 and 1000"),
		at("partition beyond int32", "rollout.partition", int64(99999999999), "spec.rollout.partition must be between 0 and 1000"),
		at("unknown strategy", "rollout.strategy", "BlueGreen", `spec.rollout.strategy: Unsupported value: "BlueGreen"`),
		at("unknown restart policy", "restartPolicy", "Always", `spec.restartPolicy: Unsupported value: "Always"`),
		at("empty restart id", "restart.id", "", "spec.restart.id must not be empty"),
		// Weights and readiness.
		at("weights from ftp", "weights.source", "ftp://x/y", "spec.weights.source must start with pvc://, hf:// or s3://"),
		at("weights repository starting with -", "weights.source", "hf://-x/y", "spec.weights.source must not start its claim, repository or bucket with '-'"),
		at("readiness path without a slash", "readiness.path", "health", "spec.readiness.path must be an HTTP path starting with /"),
		at("readiness path with a space", "readiness.path", "/health check", "spec.readiness.path must not contain whitespace"),
		// Scheduling.
		at("scheduler name not a DNS name", "scheduling.schedulerName", "My_Scheduler", "spec.scheduling.schedulerName must be a DNS subdomain"),
		at("priority class not a DNS name", "scheduling.priorityClassName", "High Priority", "spec.scheduling.priorityClassName must name a PriorityClass"),
		at("exclusive topology not a label key", "scheduling.exclusiveTopology", "zone name", "spec.scheduling.exclusiveTopology must be a node label key"),
		invalid("node selector key not a label key", "scheduling.nodeSelector", map[string]any{"bad key": "x"}, "spec.scheduling.nodeSelector[bad key]"),
		invalid("node selector value too long", "scheduling.nodeSelector", map[string]any{"pool": strings.Repeat("v", 64)}, "spec.scheduling.nodeSelector[pool]"),
		// The template overlay: only the operator can tell what does not decode or merge.
		at("template not an object", "template", "pod", "spec.template: Invalid value"),
		invalid("template containers not a list", "template", map[string]any{"spec": map[string]any{"containers": 5}}, "spec.template.spec.containers: must be a list"),
		invalid("template field misspelt", "template", map[string]any{"spec": map[string]any{"nodeSelecter": map[string]any{"a": "b"}}}, `unknown field "spec.nodeSelecter"`),
		invalid("template priority beyond int32", "template", map[string]any{"spec": map[string]any{"priority": int64(99999999999)}}, "spec.template.spec.priority"),
		invalid("template takes the serving's name label", "template", map[string]any{"metadata": map[string]any{"labels": map[string]any{v1.LabelName: "other"}}},
			"spec.template.metadata.labels[serving.kubectl-llm.dev/name]"),
		invalid("template takes the revision label", "template", map[string]any{"metadata": map[string]any{"labels": map[string]any{v1.LabelRevision: "r"}}},
			"spec.template.metadata.labels[serving.kubectl-llm.dev/revision]"),
		invalid("template sets an LWS label", "template", map[string]any{"metadata": map[string]any{"labels": map[string]any{lwsv1.GroupIndexLabelKey: "0"}}},
			"spec.template.metadata.labels[leaderworkerset.sigs.k8s.io/group-index]"),
		{name: "template that fits a serving but not the LWS that doubles it", spec: with(with(ok, "groupSize", 2), "template",
			map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "engine", "args": []any{bigArg}}}}}),
			want: degraded, reason: v1.ReasonApplyFailed, says: "LeaderWorkerSet"},
		// Command lines: refused by the plugin naming the flag (what only it can check: a required
		// flag, flag syntax), or by the API server naming the field (its message is the message).
		deploy("deploy without --model", cliRefusal, "--model is required", "deploy", "q1"),
		deploy("deploy --gpus -1", admission, "spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64", "deploy", "q2", "--model", "m", "--gpus", "-1"),
		deploy("deploy --group-size 65", admission, "spec.groupSize is the number of pods per group (leader + workers) and must be between 1 and 64", "deploy", "q3", "--model", "m", "--group-size", "65"),
		deploy("deploy --max-surge lots", admission, "spec.rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage", "deploy", "q4", "--model", "m", "--max-surge", "lots"),
		deploy("deploy --startup-timeout -1s", admission, "spec.readiness.startupTimeout must be a positive duration", "deploy", "q5", "--model", "m", "--startup-timeout", "-1s"),
		deploy("deploy NAME with _", admission, "metadata.name must be a DNS-1035 label", "deploy", "q_6", "--model", "m"),
		deploy("deploy a name ending in -<number>", admission, "metadata.name must not end in -<number>", "deploy", "llama-7", "--model", "m"),
		deploy("deploy --model starting with -", admission, "spec.model must not start with '-'", "deploy", "q8", "--model", "--help-me"),
		deploy("deploy --gpus 65", admission, "spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64", "deploy", "q9", "--model", "m", "--gpus", "65"),
		deploy("deploy --max-surge 101%", admission, "spec.rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage between 0% and 100%", "deploy", "q10", "--model", "m", "--max-surge", "101%"),
		deploy("deploy --cpu 1e400", admission, "spec.resources.cpu must be a positive CPU quantity of at most 4096", "deploy", "q11", "--model", "m", "--cpu", "1e400"),
		deploy("deploy --startup-timeout 48h", admission, "spec.readiness.startupTimeout must be a positive duration of at most 24h", "deploy", "q12", "--model", "m", "--startup-timeout", "48h"),
		deploy("deploy --partition 5000", admission, "spec.rollout.partition must be between 0 and 1000", "deploy", "q13", "--model", "m", "--partition", "5000"),
		deploy("deploy --weights hf://-x/y", admission, "spec.weights.source must not start its claim, repository or bucket with '-'", "deploy", "q14", "--model", "m", "--weights", "hf://-x/y"),
		deploy("scale --replicas 5000", admission, "spec.replicas is the number of groups and must be between 0 and 1000", "scale", "neighbour", "--replicas", "5000"),
	}
	for i := range cases {
		c := &cases[i]
		if c.object == "" && c.args == nil {
			c.object = fmt.Sprintf("bad%d", i)
		}
		if c.args != nil && c.object == "" {
			c.object = c.args[1] // deploy NAME / scale NAME
		}
	}
	return cases
}

func TestTheBadInputCorpus(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client, "corpus-")
	// The neighbour: a serving that must not notice any of the corpus.
	neighbour := &v1.ModelServing{ObjectMeta: metav1.ObjectMeta{Name: "neighbour", Namespace: ns},
		Spec: v1.ModelServingSpec{Model: "Qwen/Qwen3-0.6B", Replicas: ptrTo[int32](2), GroupSize: 2}}
	if err := env.Client.Create(ctx, neighbour); err != nil {
		t.Fatal(err)
	}
	settled := waitFor(t, ns, "neighbour", "the neighbour to converge", func(ms *v1.ModelServing) bool {
		return ms.Status.ObservedGeneration == ms.Generation && ms.Status.UpdateRevision != ""
	})
	lwsBefore := &lwsv1.LeaderWorkerSet{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "neighbour"}, lwsBefore); err != nil {
		t.Fatal(err)
	}

	cases := corpus()
	counts := map[outcome]int{}
	for _, tc := range cases {
		counts[tc.want]++
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.args != nil:
				checkCommandLine(t, ns, tc)
			case tc.want == admission:
				checkAdmission(t, ns, tc)
			default:
				checkDegraded(t, ns, tc)
			}
		})
	}
	t.Logf("bad-input corpus: %d cases (%d refused at admission, %d refused by the CLI, %d reported Degraded)",
		len(cases), counts[admission], counts[cliRefusal], counts[degraded])
	if len(cases) < 60 {
		t.Errorf("the corpus has %d cases, want at least 60", len(cases))
	}

	// The neighbour did not notice: same spec, same LWS, still converged, not degraded, through a
	// window in which a late reaction to the corpus would show.
	testenv.Consistently(t, time.Second, "the neighbour unchanged", func() error {
		after := &v1.ModelServing{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(neighbour), after); err != nil {
			return err
		}
		lwsAfter := &lwsv1.LeaderWorkerSet{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "neighbour"}, lwsAfter); err != nil {
			return err
		}
		if after.Generation != settled.Generation || after.Status.ObservedGeneration != after.Generation || lwsAfter.ResourceVersion != lwsBefore.ResourceVersion {
			return fmt.Errorf("generation %d -> %d (observed %d), LWS resourceVersion %s -> %s",
				settled.Generation, after.Generation, after.Status.ObservedGeneration, lwsBefore.ResourceVersion, lwsAfter.ResourceVersion)
		}
		if c := meta.FindStatusCondition(after.Status.Conditions, v1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("degraded: %+v", c)
		}
		return nil
	})
}

func object(ns string, tc badInput) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "ModelServing",
		"metadata": map[string]any{"name": tc.object, "namespace": ns},
		"spec":     deepCopy(tc.spec),
	}}
}

func checkAdmission(t *testing.T, ns string, tc badInput) {
	err := env.Client.Create(context.Background(), object(ns, tc))
	if err == nil {
		t.Fatalf("the API server accepted it; want a refusal saying %q", tc.says)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
		t.Errorf("refusal does not say what to fix:\n got: %v\nwant: …%s…", err, tc.says)
	}
	nothingApplied(t, ns, tc.object, true)
}

func checkDegraded(t *testing.T, ns string, tc badInput) {
	if err := env.Client.Create(context.Background(), object(ns, tc)); err != nil {
		t.Fatalf("the API server refused it (%v); the corpus says only the operator can tell", err)
	}
	ms := waitFor(t, ns, tc.object, "Degraded/"+tc.reason, func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == tc.reason
	})
	if c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded); !strings.Contains(c.Message, tc.says) {
		t.Errorf("Degraded message does not name it:\n got: %s\nwant: …%s…", c.Message, tc.says)
	}
	nothingApplied(t, ns, tc.object, false)
	// Delete it, so the namespace holds only the neighbour; the finalizer must let go.
	if err := env.Client.Delete(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the bad serving to go", func() (bool, error) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ms), &v1.ModelServing{})
		return apierrors.IsNotFound(err), nil
	})
}

func checkCommandLine(t *testing.T, ns string, tc badInput) {
	code, stderr := runCLI(append([]string{"--kubeconfig", kubeconfig, "-n", ns}, tc.args...)...)
	if code != 1 || !strings.Contains(stderr, tc.says) {
		t.Errorf("exit %d, stderr %q; want exit 1 saying %q", code, stderr, tc.says)
	}
	if tc.object != "neighbour" {
		nothingApplied(t, ns, tc.object, true)
	}
}

// nothingApplied checks that no child of the bad serving exists, nor (when refused) the serving.
func nothingApplied(t *testing.T, ns, name string, refused bool) {
	t.Helper()
	ctx := context.Background()
	if name == "" {
		return
	}
	if refused {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1.ModelServing{}); !apierrors.IsNotFound(err) {
			t.Errorf("serving %s exists after its refusal (err %v)", name, err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &lwsv1.LeaderWorkerSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a LeaderWorkerSet %s was made (err %v)", name, err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: naming.ServiceName(name)}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Service %s was made (err %v)", naming.ServiceName(name), err)
	}
}

func waitFor(t *testing.T, ns, name, what string, cond func(*v1.ModelServing) bool) *v1.ModelServing {
	t.Helper()
	ms := &v1.ModelServing{}
	testenv.Eventually(t, 20*time.Second, what, func() (bool, error) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ms); err != nil {
			return false, err
		}
		return cond(ms), nil
	})
	return ms
}

// runCLI runs the real command tree in-process, as a script would: stdin empty, output captured.
func runCLI(args ...string) (int, string) {
	var out, errOut testenv.SyncBuffer
	o := &cli.RootOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		Streams:     genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Clock:       clock.RealClock{},
	}
	cmd := cli.NewRootCommandWith(o)
	cmd.SetArgs(args)
	code := cli.Execute(context.Background(), cmd, &errOut)
	return code, errOut.String()
}

func ptrTo[T any](v T) *T { return &v }
