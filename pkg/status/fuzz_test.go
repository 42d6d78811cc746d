package status_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// FuzzBuildGroups feeds pod labels anyone may set (group and worker indices) with any desired
// count and group size: BuildGroups must not panic, must stay within the groups that can exist
// and must keep every group the right size.
func FuzzBuildGroups(f *testing.F) {
	f.Add("0", "0", "1", "1", 2, 2)
	f.Add("1000000000000", "0", "0", "1", 2, 2)
	f.Add("9223372036854775807", "9223372036854775807", "-1", "-1", 1000, 64)
	f.Add("1999", "63", "2000", "64", 1, 1)
	f.Add("", "x", "01", "+1", -1, 0)
	f.Fuzz(func(t *testing.T, g1, w1, g2, w2 string, desired, size int) {
		pods := []corev1.Pod{
			fixtures.Pod("qwen", 0, 0, "r1").Label(lwsv1.GroupIndexLabelKey, g1).Label(lwsv1.WorkerIndexLabelKey, w1).Obj(),
			fixtures.Pod("qwen", 0, 0, "r1").NotReady().Label(lwsv1.GroupIndexLabelKey, g2).Label(lwsv1.WorkerIndexLabelKey, w2).Obj(),
		}
		groups := status.BuildGroups(pods, desired, size, now)
		wantSize := min(max(size, 1), v1.MaxGroupSize)
		if len(groups) > v1.MaxGroups {
			t.Fatalf("%d groups, more than the %d that can exist", len(groups), v1.MaxGroups)
		}
		prev := -1
		for _, g := range groups {
			if g.Index < 0 || g.Index >= v1.MaxGroups || g.Index <= prev {
				t.Fatalf("group index %d after %d: out of bounds or out of order", g.Index, prev)
			}
			prev = g.Index
			if len(g.Pods) != wantSize || g.ReadyPods > wantSize {
				t.Fatalf("group %d has %d pods (%d ready), want %d", g.Index, len(g.Pods), g.ReadyPods, wantSize)
			}
			if len(g.Reason()) > status.MaxReasonLength {
				t.Fatalf("group %d reason of %d bytes", g.Index, len(g.Reason()))
			}
		}
	})
}

// FuzzSummarize feeds a pod's status fields, as a kubelet (or anyone who may write pod status)
// reports them, and the serving's counts: Summarize must not panic, its counts must stay within
// the groups, and its messages within bounds.
func FuzzSummarize(f *testing.F) {
	f.Add(int32(2), int32(2), int32(1), "Running", "CrashLoopBackOff", "back-off", "0/4 nodes: Insufficient nvidia.com/gpu", int64(30), true)
	f.Add(int32(1000), int32(64), int32(1000), "Failed", "ImagePullBackOff", "", "", int64(-1), false)
	f.Add(int32(-1), int32(-1), int32(-5), "", "", "", "", int64(0), true)
	f.Add(int32(2147483647), int32(2147483647), int32(2147483647), "Pending", "x", "\xff\xfe", "\x00", int64(1<<62), false)
	f.Fuzz(func(t *testing.T, replicas, groupSize, partition int32, phase, waiting, msg, schedMsg string, ageSeconds int64, deleting bool) {
		// Admission bounds replicas and groupSize (TestBuildGroupsClampsDesiredAndSize covers
		// values beyond); keeping them near the bounds keeps the fuzzer fast.
		replicas, groupSize = replicas%(v1.MaxReplicas+2), groupSize%(v1.MaxGroupSize+2)
		ms := fixtures.Serving("qwen", "default").Replicas(replicas).GroupSize(groupSize).Partition(partition).Obj()
		pod := fixtures.Pod("qwen", 0, 0, "r1").Waiting(waiting, msg, 3, 1).Obj()
		pod.Status.Phase = corev1.PodPhase(phase)
		pod.Status.Message = msg
		if schedMsg != "" {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: schedMsg})
		}
		start := metav1.NewTime(now.Add(-time.Duration(ageSeconds) * time.Second))
		pod.Status.StartTime = &start
		if deleting {
			pod.DeletionTimestamp = &start
		}
		sum := status.Summarize(status.Input{Serving: ms, Pods: []corev1.Pod{pod}, UpdateRevision: "r1", TemplateRevision: "r1", Now: now})
		if sum.Ready > sum.Replicas || sum.Updated > int32(len(sum.Groups)) || int(sum.Replicas) > len(sum.Groups) {
			t.Fatalf("counts out of the groups: replicas %d ready %d updated %d, %d groups", sum.Replicas, sum.Ready, sum.Updated, len(sum.Groups))
		}
		for _, c := range sum.Conditions() {
			if len(c.Message) > 8192 || c.Reason == "" {
				t.Fatalf("%s condition: reason %q, message of %d bytes", c.Type, c.Reason, len(c.Message))
			}
		}
		for _, g := range sum.Groups {
			_ = g.Detail(now)
		}
	})
}
