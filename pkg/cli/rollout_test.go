package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

var (
	complete    = [3]string{"True", v1.ReasonRolloutComplete, "2 of 2 groups ready on revision qwen-r2"}
	rollingOut  = [3]string{"True", v1.ReasonRollingOut, "1 of 2 groups updated, 1 of 2 ready"}
	deadline    = [3]string{"False", v1.ReasonProgressDeadlineExceeded, "no progress for more than 30m0s: 1 of 2 groups updated, 1 of 2 ready"}
	available   = [3]string{"True", v1.ReasonGroupsAvailable, "1 of 2 groups ready (at most 1 may be unavailable)"}
	notDegraded = [3]string{"False", v1.ReasonAsExpected, "no group is failing"}
)

func TestRolloutStatusExitCodes(t *testing.T) {
	ns := namespace(t, "rollout-status")
	now := time.Now()
	cases := []struct {
		name     string
		st       v1.ModelServingStatus
		args     []string
		code     int
		golden   string
		errorHas string
	}{
		{
			name: "complete", code: 0, golden: "rollout-status-complete",
			st: v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: conditions(now, available, complete, notDegraded)},
		},
		{
			name: "deadline", code: cli.ExitRolloutFailed, golden: "rollout-status-deadline",
			st: v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, deadline, notDegraded)},
		},
		{
			name: "invalid", code: cli.ExitRolloutFailed, errorHas: `serving "invalid" cannot be rolled out: its spec cannot be served: spec.template.metadata.labels`,
			st: v1.ModelServingStatus{Conditions: conditions(now, available, [3]string{"False", v1.ReasonInvalidSpec, "fix it"},
				[3]string{"True", v1.ReasonInvalidSpec, "spec.template.metadata.labels[serving.kubectl-llm.dev/name]: Forbidden: is set by the operator"})},
		},
		{
			name: "timeout", code: cli.ExitTimedOut, golden: "rollout-status-timeout", args: []string{"--timeout", "1s"},
			st: v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, rollingOut, notDegraded)},
		},
		{
			name: "once", code: 0, golden: "rollout-status-once", args: []string{"--watch=false"},
			st: v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, rollingOut, notDegraded)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms := seedServing(t, ns, fixtures.Serving(tc.name, ns).Replicas(2))
			writeStatus(t, ms, tc.st)
			r := run(t, now, append([]string{"-n", ns, "rollout", "status", tc.name}, tc.args...)...)
			expectCode(t, r, tc.code)
			if tc.golden != "" {
				golden(t, tc.golden, "stdout:\n"+r.Out+"stderr:\n"+r.Err)
			}
			if !strings.Contains(r.Err, tc.errorHas) {
				t.Errorf("stderr %q does not contain %q", r.Err, tc.errorHas)
			}
		})
	}
}

// TestRolloutStatusWaitsByWatching starts waiting on a rollout in progress, then completes it
// the way the operator would (a status write), and expects the command to notice and exit 0.
func TestRolloutStatusWaitsByWatching(t *testing.T) {
	ns := namespace(t, "rollout-status-watch")
	now := time.Now()
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2))
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, Conditions: conditions(now, available, rollingOut, notDegraded)})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, done := start(ctx, now, "-n", ns, "rollout", "status", "qwen", "--timeout", "50s")
	waitFor(t, out, "Waiting for rollout to finish: 1 of 2 groups updated...")
	select {
	case r := <-done:
		t.Fatalf("rollout status returned before the rollout finished: %+v", r)
	default:
	}
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, Conditions: conditions(now, available, rollingOut, notDegraded)})
	writeStatus(t, ms, v1.ModelServingStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Conditions: conditions(now, available, complete, notDegraded)})
	r := <-done
	expectCode(t, r, 0)
	golden(t, "rollout-status-watch", r.Out)
}

func TestRolloutStatusOfAMissingServingSuggestsCloseNames(t *testing.T) {
	ns := namespace(t, "rollout-status-missing")
	seedServing(t, ns, fixtures.Serving("qwen-large", ns))
	r := run(t, time.Now(), "-n", ns, "rollout", "status", "qwen-larg")
	expectCode(t, r, 1)
	if r.Err != "error: modelserving \"qwen-larg\" not found in namespace \"rollout-status-missing\"; did you mean qwen-large?\n" {
		t.Errorf("stderr %q", r.Err)
	}
}

// seedHistory creates a serving on image v3 with three recorded revisions, current = revision 1.
func seedHistory(t *testing.T, ns string) (*v1.ModelServing, []string) {
	t.Helper()
	ms := seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2).GroupSize(2).Image("vllm/vllm-openai:v0.12.0"))
	var names []string
	for i, img := range []string{"vllm/vllm-openai:v0.10.0", "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.12.0"} {
		spec := ms.Spec.DeepCopy()
		spec.Engine.Image = img
		names = append(names, recordRevision(t, ms, *spec, int64(i+1)))
	}
	writeStatus(t, ms, v1.ModelServingStatus{CurrentRevision: names[0], UpdateRevision: names[2]})
	return ms, names
}

func TestRolloutHistoryGolden(t *testing.T) {
	ns := namespace(t, "rollout-history")
	seedHistory(t, ns)
	r := run(t, time.Now(), "-n", ns, "rollout", "history", "qwen")
	expectCode(t, r, 0)
	golden(t, "rollout-history", r.Out)
	r = run(t, time.Now(), "-n", ns, "rollout", "history", "qwen", "--revision", "2")
	expectCode(t, r, 0)
	golden(t, "rollout-history-revision", r.Out)
	r = run(t, time.Now(), "-n", ns, "rollout", "history", "qwen", "--revision", "9")
	expectCode(t, r, 1)
	if r.Err != "error: revision 9 of serving \"qwen\" not found: recorded revisions are 1, 2, 3\n" {
		t.Errorf("stderr %q", r.Err)
	}
}

func TestRolloutUndoRestoresARecordedRevision(t *testing.T) {
	ns := namespace(t, "rollout-undo")
	seedHistory(t, ns)
	r := run(t, time.Now(), "-n", ns, "rollout", "undo", "qwen")
	expectCode(t, r, 0)
	if got := getServing(t, ns, "qwen").Spec.Engine.Image; got != "vllm/vllm-openai:v0.11.0" {
		t.Fatalf("undo to the previous revision: image %s, want v0.11.0", got)
	}
	if !strings.Contains(r.Out, "rolled back to revision 2") {
		t.Errorf("undo printed %q", r.Out)
	}
	r = run(t, time.Now(), "-n", ns, "rollout", "undo", "qwen", "--to-revision", "1")
	expectCode(t, r, 0)
	ms := getServing(t, ns, "qwen")
	if ms.Spec.Engine.Image != "vllm/vllm-openai:v0.10.0" || *ms.Spec.Replicas != 2 {
		t.Fatalf("undo --to-revision 1: image %s replicas %d, want v0.10.0 and replicas kept", ms.Spec.Engine.Image, *ms.Spec.Replicas)
	}
	r = run(t, time.Now(), "-n", ns, "rollout", "undo", "qwen", "--to-revision", "1")
	expectCode(t, r, 0)
	if !strings.Contains(r.Out, "skipped rollback") {
		t.Errorf("undo to the revision the spec already has printed %q", r.Out)
	}
}

func TestRolloutPauseAndResume(t *testing.T) {
	ns := namespace(t, "rollout-pause")
	seedServing(t, ns, fixtures.Serving("qwen", ns))
	r := run(t, time.Now(), "-n", ns, "rollout", "pause", "qwen")
	expectCode(t, r, 0)
	if !getServing(t, ns, "qwen").Spec.Rollout.Paused || r.Out != "modelserving.serving.kubectl-llm.dev/qwen paused\n" {
		t.Fatalf("pause: paused=%v out %q", getServing(t, ns, "qwen").Spec.Rollout.Paused, r.Out)
	}
	r = run(t, time.Now(), "-n", ns, "rollout", "pause", "qwen")
	expectCode(t, r, 1)
	if r.Err != "error: serving \"qwen\" is already paused\n" {
		t.Errorf("second pause: %q", r.Err)
	}
	r = run(t, time.Now(), "-n", ns, "rollout", "resume", "qwen")
	expectCode(t, r, 0)
	if getServing(t, ns, "qwen").Spec.Rollout.Paused {
		t.Fatal("resume left the rollout paused")
	}
}

func TestSetImageAndScale(t *testing.T) {
	ns := namespace(t, "set-scale")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(1))
	r := run(t, time.Now(), "-n", ns, "set", "image", "qwen", "vllm/vllm-openai:v0.12.0")
	expectCode(t, r, 0)
	if got := getServing(t, ns, "qwen").Spec.Engine.Image; got != "vllm/vllm-openai:v0.12.0" {
		t.Errorf("set image: %s", got)
	}
	r = run(t, time.Now(), "-n", ns, "scale", "qwen", "--replicas", "3")
	expectCode(t, r, 0)
	if got := ptr.Deref(getServing(t, ns, "qwen").Spec.Replicas, 0); got != 3 || r.Out != "modelserving.serving.kubectl-llm.dev/qwen scaled to 3 group(s)\n" {
		t.Errorf("scale: replicas %d, out %q", got, r.Out)
	}
}
