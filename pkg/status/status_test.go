package status_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

var now = time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC)

// staleBind is what kube-scheduler writes when the pod it was binding was deleted meanwhile.
const staleBind = `running Bind plugin "DefaultBinder": pods "cl-1-1" not found`

func TestClassifyPodSaysWhyAPodIsNotReady(t *testing.T) {
	gpuMsg := "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
	cases := []struct {
		name      string
		pod       corev1.Pod
		state     status.PodState
		reasonHas string
	}{
		{"ready", fixtures.Pod("qwen", 0, 0, "r1").Obj(), status.PodReady, ""},
		{"loading weights", fixtures.Pod("qwen", 0, 0, "r1").NotReady().Obj(), status.PodLoading, "loading weights / starting for 5m0s"},
		{"no GPU for it", fixtures.Pod("qwen", 1, 1, "r1").Unschedulable(gpuMsg).Obj(), status.PodPending, "FailedScheduling: Insufficient nvidia.com/gpu (0/4 nodes are available"},
		{"unschedulable otherwise", fixtures.Pod("qwen", 1, 1, "r1").Unschedulable("0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.").Obj(), status.PodPending, "FailedScheduling: 0/4 nodes are available: 4 node(s) didn't match"},
		{"crash loop", fixtures.Pod("qwen", 0, 0, "r1").Waiting("CrashLoopBackOff", "back-off 5m0s", 7, 1).Obj(), status.PodFailing, "CrashLoopBackOff: container engine restarted 7 times, last exit 1 (Error)"},
		{"image pull", fixtures.Pod("qwen", 0, 0, "r1").Waiting("ImagePullBackOff", "Back-off pulling image \"vllm/vllm-openai:v9\"", 0, 0).Obj(), status.PodFailing, "ImagePullBackOff: Back-off pulling image"},
		{"out of memory", fixtures.Pod("qwen", 0, 0, "r1").OOMKilled(2).Obj(), status.PodFailing, "OOMKilled: container engine ran out of memory and restarted 2 times"},
		{"terminating briefly", fixtures.Pod("qwen", 0, 0, "r1").Terminating(now.Add(-10 * time.Second)).Obj(), status.PodTerminating, "Terminating"},
		{"terminating for long", fixtures.Pod("qwen", 0, 0, "r1").Terminating(now.Add(-10 * time.Minute)).Obj(), status.PodTerminating, "Terminating for 10m0s"},
		{"creating", fixtures.Pod("qwen", 0, 0, "r1").Waiting("ContainerCreating", "", 0, 0).Obj(), status.PodStarting, "ContainerCreating"},
		// kube-scheduler patches PodScheduled by pod name: a failed bind of a deleted pod can land
		// on its same-named replacement after that was bound. A pod on a node is scheduled.
		{"bound and ready under a stale scheduling failure", fixtures.Pod("cl", 1, 1, "r1").StaleSchedulingFailure(staleBind).Obj(), status.PodReady, ""},
		{"bound and loading under a stale scheduling failure", fixtures.Pod("cl", 1, 1, "r1").NotReady().StaleSchedulingFailure(staleBind).Obj(), status.PodLoading, "loading weights"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			if tc.state == status.PodStarting {
				pod.Status.Phase = corev1.PodPending
			}
			state, reason := status.ClassifyPod(&pod)
			// The reason holds no duration (it is stored in status); Detail renders the age for views.
			reason = status.Pod{State: state, Reason: reason, Since: status.PodSince(&pod, state)}.Detail(now)
			if state != tc.state {
				t.Errorf("state = %s, want %s (reason %q)", state, tc.state, reason)
			}
			if tc.reasonHas == "" && reason != "" {
				t.Errorf("reason = %q, want none", reason)
			}
			if !strings.Contains(reason, tc.reasonHas) {
				t.Errorf("reason = %q, want it to contain %q", reason, tc.reasonHas)
			}
		})
	}
}

func TestBuildGroupsPlacesPodsLeaderFirstAndShowsMissingAndSurgeGroups(t *testing.T) {
	pods := append(fixtures.Group("qwen", 0, 2, "r1"), fixtures.Pod("qwen", 1, 0, "r1").NotReady().Obj())
	pods = append(pods, fixtures.Group("qwen", 2, 2, "r2")...) // a surge group above the desired 2
	groups := status.BuildGroups(pods, 2, 2, now)
	type row struct {
		Index, Ready int
		Surge        bool
		States       []status.PodState
	}
	var got []row
	for _, g := range groups {
		r := row{Index: g.Index, Ready: g.ReadyPods, Surge: g.Surge}
		for _, p := range g.Pods {
			r.States = append(r.States, p.State)
		}
		got = append(got, r)
	}
	want := []row{
		{0, 2, false, []status.PodState{status.PodReady, status.PodReady}},
		{1, 0, false, []status.PodState{status.PodLoading, status.PodMissing}},
		{2, 2, true, []status.PodState{status.PodReady, status.PodReady}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if r := groups[1].Reason(); !strings.HasPrefix(r, "leader: not ready: loading weights") {
		t.Errorf("group 1 reason = %q, want the leader's loading reason", r)
	}
}

// A worker of the group's previous leader (another revision, or made before the leader) is still
// Ready for a moment after the new leader is: LWS makes a leader's workers once the leader exists,
// and the garbage collector takes the previous one's a moment later. The group is not ready then,
// and the worker shows as not made yet; the status said Ready, not Ready, Ready at every step of a
// rollout. A worker made in the same second as its leader, or up to 2 s before it by the
// timestamps (API servers' clocks differ), is the leader's.
func TestAWorkerOfThePreviousLeaderDoesNotMakeItsGroupReady(t *testing.T) {
	leaderMade := metav1.NewTime(time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC))
	newLeader := func(g int, rev string) corev1.Pod {
		p := fixtures.Pod("qwen", g, 0, rev).Obj()
		p.CreationTimestamp = leaderMade
		return p
	}
	rolled := []corev1.Pod{newLeader(0, "r2"), fixtures.Pod("qwen", 0, 1, "r1").Obj()}    // a rollout's step
	restarted := []corev1.Pod{newLeader(1, "r1"), fixtures.Pod("qwen", 1, 1, "r1").Obj()} // a group's restart
	sameSecond := fixtures.Pod("qwen", 2, 1, "r1").Obj()
	sameSecond.CreationTimestamp = leaderMade
	current := []corev1.Pod{newLeader(2, "r1"), sameSecond}
	skewed := fixtures.Pod("qwen", 3, 1, "r1").Obj()
	skewed.CreationTimestamp = metav1.NewTime(leaderMade.Add(-2 * time.Second))
	current = append(current, newLeader(3, "r1"), skewed)
	groups := status.BuildGroups(append(append(rolled, restarted...), current...), 4, 2, now)
	for _, g := range groups[:2] {
		if g.Ready() || g.ReadyPods != 1 || g.Pods[1].State != status.PodMissing {
			t.Errorf("group %d: ready %v, %d pods ready, worker %s; want not ready, 1 (the leader), the worker missing", g.Index, g.Ready(), g.ReadyPods, g.Pods[1].State)
		}
		if r := g.Reason(); !strings.Contains(r, "previous leader") {
			t.Errorf("group %d reason = %q, want it to say the worker there is the previous leader's", g.Index, r)
		}
	}
	for _, g := range groups[2:] {
		if !g.Ready() {
			t.Errorf("group %d, its worker made in the same second as its leader or 2 s before: not ready (%d pods), want ready", g.Index, g.ReadyPods)
		}
	}
}

func cond(c metav1.Condition) string { return string(c.Status) + "/" + c.Reason }

func TestSummarize(t *testing.T) {
	gpuMsg := "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
	twoGroups := func(rev0, rev1 string) []corev1.Pod {
		return append(fixtures.Group("qwen", 0, 2, rev0), fixtures.Group("qwen", 1, 2, rev1)...)
	}
	cases := []struct {
		name                         string
		ms                           *v1.ModelServing
		pods                         []corev1.Pod
		phase                        v1.Phase
		done                         bool
		available, progress, degrade string
		counts                       [3]int32 // replicas, ready, updated
		msgHas                       string
	}{
		{
			name: "all groups ready on the update revision",
			ms:   fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Obj(), pods: twoGroups("r2", "r2"),
			phase: v1.PhaseReady, done: true, available: "True/MinimumGroupsAvailable", progress: "True/RolloutComplete", degrade: "False/AsExpected",
			counts: [3]int32{2, 2, 2}, msgHas: "2 of 2 groups ready on revision r2",
		},
		{
			name:  "first start: nothing ready yet",
			ms:    fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Obj(),
			pods:  []corev1.Pod{fixtures.Pod("qwen", 0, 0, "r2").NotReady().Obj()},
			phase: v1.PhasePending, available: "False/GroupsUnavailable", progress: "True/Scaling", degrade: "False/AsExpected",
			counts: [3]int32{1, 0, 1}, msgHas: "1 of 2 groups updated, 0 of 2 ready",
		},
		{
			name: "rolling: the highest group moved first",
			ms: fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).
				Status(v1.ModelServingStatus{UpdateRevision: "r1", CurrentRevision: "r1", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2}).Obj(),
			pods:  append(fixtures.Group("qwen", 0, 2, "r1"), fixtures.Pod("qwen", 1, 0, "r2").NotReady().Obj(), fixtures.Pod("qwen", 1, 1, "r2").Obj()),
			phase: v1.PhaseProgressing, available: "True/MinimumGroupsAvailable", progress: "True/RollingOut", degrade: "False/AsExpected",
			counts: [3]int32{2, 1, 1}, msgHas: "1 of 2 groups updated, 1 of 2 ready",
		},
		{
			// Not Scaling: the reason went RollingOut, Scaling, RollingOut, Scaling at a rollout's
			// last group on the simulated cluster (its new leader there, then its old worker
			// going), a status write each.
			name: "rolling: every group on the update revision, the last one not ready yet",
			ms: fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).
				Status(v1.ModelServingStatus{UpdateRevision: "r2", CurrentRevision: "r1", Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1}).Obj(),
			pods:  append(fixtures.Group("qwen", 1, 2, "r2"), fixtures.Pod("qwen", 0, 0, "r2").NotReady().Obj()),
			phase: v1.PhaseProgressing, available: "True/MinimumGroupsAvailable", progress: "True/RollingOut", degrade: "False/AsExpected",
			counts: [3]int32{2, 1, 2}, msgHas: "2 of 2 groups updated, 1 of 2 ready",
		},
		{
			name: "canary held at partition 1",
			ms:   fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Partition(1).Status(v1.ModelServingStatus{UpdateRevision: "r2", CurrentRevision: "r1"}).Obj(),
			pods: twoGroups("r1", "r2"), phase: v1.PhaseProgressing, done: true,
			available: "True/MinimumGroupsAvailable", progress: "True/CanaryHeld", degrade: "False/AsExpected",
			counts: [3]int32{2, 2, 1}, msgHas: "canary: groups 1 and above run revision r2",
		},
		{
			name: "a surge group that cannot get GPUs",
			ms: fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Surge(intstr.FromInt32(1), intstr.FromInt32(0)).
				Status(v1.ModelServingStatus{UpdateRevision: "r1", CurrentRevision: "r1"}).Obj(),
			pods: append(twoGroups("r1", "r1"), fixtures.Pod("qwen", 2, 0, "r2").Unschedulable(gpuMsg).Obj(),
				fixtures.Pod("qwen", 2, 1, "r2").Unschedulable(gpuMsg).Obj()),
			phase: v1.PhaseDegraded, available: "True/MinimumGroupsAvailable", progress: "True/RollingOut", degrade: "True/InsufficientGPU",
			counts: [3]int32{3, 2, 0}, msgHas: "group 2 leader; group 2 worker 1 cannot be scheduled: Insufficient nvidia.com/gpu; a surge group needs a whole group of spare GPUs",
		},
		{
			name:  "a crash-looping worker",
			ms:    fixtures.Serving("qwen", "default").Replicas(1).GroupSize(2).Obj(),
			pods:  []corev1.Pod{fixtures.Pod("qwen", 0, 0, "r2").Obj(), fixtures.Pod("qwen", 0, 1, "r2").Waiting("CrashLoopBackOff", "", 4, 137).Obj()},
			phase: v1.PhaseDegraded, available: "False/GroupsUnavailable", progress: "True/Scaling", degrade: "True/GroupsFailing",
			counts: [3]int32{1, 0, 1}, msgHas: "group 0 worker 1: CrashLoopBackOff",
		},
		{
			name: "no progress past the deadline",
			ms: fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Status(v1.ModelServingStatus{
				UpdateRevision: "r2", CurrentRevision: "r1", Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1,
				LastProgressTime: &metav1.Time{Time: now.Add(-31 * time.Minute)},
			}).Obj(),
			pods:  append(fixtures.Group("qwen", 0, 2, "r1"), fixtures.Pod("qwen", 1, 0, "r2").NotReady().Obj(), fixtures.Pod("qwen", 1, 1, "r2").Obj()),
			phase: v1.PhaseDegraded, available: "True/MinimumGroupsAvailable", progress: "False/ProgressDeadlineExceeded", degrade: "False/AsExpected",
			counts: [3]int32{2, 1, 1}, msgHas: "no progress for more than 30m0s",
		},
		{
			name: "paused with a new revision waiting",
			ms:   fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Paused().Status(v1.ModelServingStatus{UpdateRevision: "r1", CurrentRevision: "r1"}).Obj(),
			pods: twoGroups("r1", "r1"), phase: v1.PhaseProgressing, available: "True/MinimumGroupsAvailable", progress: "Unknown/RolloutPaused", degrade: "False/AsExpected",
			counts: [3]int32{2, 2, 0}, msgHas: "rollout paused",
		},
		{
			name:  "restart in progress",
			ms:    fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Restart("b").Status(v1.ModelServingStatus{UpdateRevision: "r2", CurrentRevision: "r2", RestartID: "a"}).Obj(),
			pods:  append(fixtures.Group("qwen", 0, 2, "r2"), fixtures.Pod("qwen", 1, 0, "r2").RestartID("b").Obj(), fixtures.Pod("qwen", 1, 1, "r2").RestartID("b").Obj()),
			phase: v1.PhaseProgressing, available: "True/MinimumGroupsAvailable", progress: "True/Restarting", degrade: "False/AsExpected",
			counts: [3]int32{2, 2, 1}, msgHas: "1 of 2 groups updated",
		},
		{
			name: "restart: every group restarted, the last one not ready yet",
			ms:   fixtures.Serving("qwen", "default").Replicas(2).GroupSize(2).Restart("b").Status(v1.ModelServingStatus{UpdateRevision: "r2", CurrentRevision: "r2", RestartID: "a"}).Obj(),
			pods: []corev1.Pod{fixtures.Pod("qwen", 0, 0, "r2").RestartID("b").NotReady().Obj(), fixtures.Pod("qwen", 0, 1, "r2").RestartID("b").Obj(),
				fixtures.Pod("qwen", 1, 0, "r2").RestartID("b").Obj(), fixtures.Pod("qwen", 1, 1, "r2").RestartID("b").Obj()},
			phase: v1.PhaseProgressing, available: "True/MinimumGroupsAvailable", progress: "True/Restarting", degrade: "False/AsExpected",
			counts: [3]int32{2, 1, 2}, msgHas: "2 of 2 groups updated, 1 of 2 ready",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := status.Input{Serving: tc.ms, Pods: tc.pods, UpdateRevision: "r2", TemplateRevision: "r2", Now: now,
				LWS: &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: lwsv1.LeaderWorkerSetStatus{ObservedGeneration: 3}}}
			if tc.ms.Spec.Rollout.Paused {
				in.TemplateRevision = "r1"
			}
			s := status.Summarize(in)
			got := []string{string(s.Phase), cond(s.Available), cond(s.Progress), cond(s.Degraded)}
			want := []string{string(tc.phase), tc.available, tc.progress, tc.degrade}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("phase and conditions (-want +got):\n%s\nmessages: %q / %q / %q", diff, s.Available.Message, s.Progress.Message, s.Degraded.Message)
			}
			if s.Done != tc.done {
				t.Errorf("done = %v, want %v", s.Done, tc.done)
			}
			if c := [3]int32{s.Replicas, s.Ready, s.Updated}; c != tc.counts {
				t.Errorf("replicas/ready/updated = %v, want %v", c, tc.counts)
			}
			all := s.Available.Message + " | " + s.Progress.Message + " | " + s.Degraded.Message
			if !strings.Contains(all, tc.msgHas) {
				t.Errorf("messages %q do not contain %q", all, tc.msgHas)
			}
		})
	}
}

func TestSummarizeReportsATerminalSpecErrorAsFailed(t *testing.T) {
	ms := fixtures.Serving("qwen", "default").Obj()
	s := status.Summarize(status.Input{Serving: ms, UpdateRevision: "r1", TemplateRevision: "r1", Now: now,
		SpecError: errors.New(`spec.template.metadata.labels[serving.kubectl-llm.dev/name]: Forbidden: is set by the operator`)})
	if s.Phase != v1.PhaseFailed || cond(s.Degraded) != "True/InvalidSpec" || !strings.Contains(s.Degraded.Message, "spec.template.metadata.labels") {
		t.Errorf("phase %s, degraded %s %q; want Failed, True/InvalidSpec naming the field", s.Phase, cond(s.Degraded), s.Degraded.Message)
	}
	if s.Done {
		t.Error("a serving whose spec cannot be served is not done")
	}
}

func TestResolveSurgeAndUnavailableCountGroupsLikeLWS(t *testing.T) {
	cases := []struct {
		surge, unavail intstr.IntOrString
		desired        int32
		wantS, wantU   int32
	}{
		{intstr.FromInt32(0), intstr.FromInt32(1), 4, 0, 1},
		{intstr.FromString("25%"), intstr.FromString("25%"), 4, 1, 1},
		{intstr.FromString("10%"), intstr.FromString("10%"), 4, 1, 0}, // surge rounds up, unavailable down
		{intstr.FromInt32(0), intstr.FromString("10%"), 4, 0, 1},      // never both 0: one group at a time
		{intstr.FromString("50%"), intstr.FromInt32(2), 3, 2, 2},
	}
	for _, tc := range cases {
		r := v1.RolloutSpec{MaxSurge: &tc.surge, MaxUnavailable: &tc.unavail}
		if s, u := status.ResolveMaxSurge(r, tc.desired), status.ResolveMaxUnavailable(r, tc.desired); s != tc.wantS || u != tc.wantU {
			t.Errorf("surge %s unavailable %s of %d: got %d/%d, want %d/%d", tc.surge.String(), tc.unavail.String(), tc.desired, s, u, tc.wantS, tc.wantU)
		}
	}
}

// DeadlineAt is when the operator must look again to report a stalled rollout: from the last
// progress, only while something is waited for.
func TestTheProgressDeadlineIsDueFromTheLastProgress(t *testing.T) {
	last := now.Add(-10 * time.Minute)
	stored := v1.ModelServingStatus{UpdateRevision: "r2", Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, LastProgressTime: &metav1.Time{Time: last}}
	rolling := []corev1.Pod{
		fixtures.Pod("qwen", 0, 0, "r2").Obj(), fixtures.Pod("qwen", 1, 0, "r1").NotReady().Obj(),
	}
	ready := []corev1.Pod{fixtures.Pod("qwen", 0, 0, "r2").Obj(), fixtures.Pod("qwen", 1, 0, "r2").Obj()}
	lws := &lwsv1.LeaderWorkerSet{}
	cases := []struct {
		name   string
		ms     *v1.ModelServing
		pods   []corev1.Pod
		tmpl   string
		specEr error
		want   time.Time
	}{
		{"waiting, nothing moved: the stored progress time plus the deadline", fixtures.Serving("qwen", "ns").Replicas(2).Status(stored).Obj(), rolling, "r2", nil, last.Add(30 * time.Minute)},
		{"the counts just moved: from now", fixtures.Serving("qwen", "ns").Replicas(2).Status(v1.ModelServingStatus{UpdateRevision: "r2", LastProgressTime: &metav1.Time{Time: last}}).Obj(), rolling, "r2", nil, now.Add(30 * time.Minute)},
		{"done: nothing to wait for", fixtures.Serving("qwen", "ns").Replicas(2).Status(stored).Obj(), ready, "r2", nil, time.Time{}},
		{"paused: nothing to wait for", fixtures.Serving("qwen", "ns").Replicas(2).Paused().Status(stored).Obj(), rolling, "r1", nil, time.Time{}},
		{"a spec that cannot be served: nothing to wait for", fixtures.Serving("qwen", "ns").Replicas(2).Status(stored).Obj(), rolling, "r2", errors.New("bad"), time.Time{}},
		{"already past the deadline: reported, nothing more to wait for", fixtures.Serving("qwen", "ns").Replicas(2).Status(v1.ModelServingStatus{
			UpdateRevision: "r2", Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 1, LastProgressTime: &metav1.Time{Time: now.Add(-time.Hour)}}).Obj(), rolling, "r2", nil, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sum := status.Summarize(status.Input{Serving: tc.ms, LWS: lws, Pods: tc.pods, UpdateRevision: "r2", TemplateRevision: tc.tmpl, SpecError: tc.specEr, Now: now})
			if !sum.DeadlineAt.Equal(tc.want) {
				t.Errorf("DeadlineAt = %s, want %s (progress %s)", sum.DeadlineAt, tc.want, sum.Progress.Reason)
			}
		})
	}
}
