package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-llm/kubectl-llm/pkg/cli"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

func TestWatchOffATerminalPrintsPlainChangeLines(t *testing.T) {
	ns := namespace(t, "watch")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(1).GroupSize(2))
	leader := seedPod(t, ns, 0, fixtures.Pod("qwen", 0, 0, "qwen-r1").NotReady(), false)
	now := time.Now()
	leader.writeStatus(t, now, time.Minute)
	seedPod(t, ns, 0, fixtures.Pod("qwen", 0, 1, "qwen-r1"), false).writeStatus(t, now, time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := start(ctx, now, "-n", ns, "watch", "qwen")
	waitFor(t, out, "group 0 leader")
	before := out.String()

	// The leader becomes ready: the watch must print it.
	pod := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(leader.pod), pod); err != nil {
		t.Fatal(err)
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			pod.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "group 0 leader: Ready")
	cancel()
	r := <-done
	if r.Code != 0 {
		t.Errorf("watch ended with %d: %s", r.Code, r.Err)
	}
	if strings.Contains(before, "group 0 leader: Ready") {
		t.Errorf("the leader was reported Ready before it was:\n%s", before)
	}
}

func TestWatchOfAMissingServingSaysSo(t *testing.T) {
	ns := namespace(t, "watch-missing")
	seedServing(t, ns, fixtures.Serving("qwen", ns))
	r := run(t, time.Now(), "-n", ns, "watch", "qwem", "--no-tui")
	expectCode(t, r, 1)
	if !strings.Contains(r.Err, `"qwem" not found`) || !strings.Contains(r.Err, "qwen") {
		t.Errorf("error = %q, want not found with the close name qwen", r.Err)
	}
}

// The live view's keys run the commands of the same name.
func TestTheLiveViewActionsAreTheCommands(t *testing.T) {
	ns := namespace(t, "watch-actions")
	seedServing(t, ns, fixtures.Serving("qwen", ns).Replicas(2).GroupSize(2).Partition(1))
	leader1 := seedPod(t, ns, 0, fixtures.Pod("qwen", 1, 0, "qwen-r1"), false)
	ctx := context.Background()
	o := &cli.RootOptions{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		Streams:     genericiooptions.IOStreams{Out: &syncBuffer{}, ErrOut: &syncBuffer{}},
		Clock:       clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)),
	}
	o.ConfigFlags.KubeConfig = ptr.To(kubeconfig)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	a := cli.NewCommandActions(o, c)

	if err := a.SetPaused(ctx, ns, "qwen", true); err != nil {
		t.Fatal(err)
	}
	if ms := getServing(t, ns, "qwen"); !ms.Spec.Rollout.Paused {
		t.Error("pause did not set spec.rollout.paused")
	}
	if err := a.Promote(ctx, ns, "qwen"); err != nil {
		t.Fatal(err)
	}
	if ms := getServing(t, ns, "qwen"); ptr.Deref(ms.Spec.Rollout.Partition, -1) != 0 {
		t.Errorf("promote left partition %d", ptr.Deref(ms.Spec.Rollout.Partition, -1))
	}
	if err := a.Restart(ctx, ns, "qwen"); err != nil {
		t.Fatal(err)
	}
	if ms := getServing(t, ns, "qwen"); ms.Spec.Restart == nil || ms.Spec.Restart.ID != "2026-11-29T10:00:00Z" {
		t.Errorf("restart id = %+v", ms.Spec.Restart)
	}
	if err := a.RestartGroup(ctx, ns, "qwen", 1); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	err = env.Client.Get(ctx, client.ObjectKeyFromObject(leader1.pod), got)
	if !apierrors.IsNotFound(err) && (err != nil || got.DeletionTimestamp == nil) {
		t.Errorf("restarting group 1 did not delete its leader (err %v)", err)
	}
	if err := a.RestartGroup(ctx, ns, "qwen", 5); err == nil || !strings.Contains(err.Error(), "--group 5 does not exist") {
		t.Errorf("restarting a group that does not exist: %v", err)
	}
}
