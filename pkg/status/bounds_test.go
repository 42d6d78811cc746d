package status_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

// Pods claiming groups or workers that cannot exist are ignored: a label is anyone's to set.
func TestBuildGroupsIgnoresPodsOutsideTheGroupsThatCanExist(t *testing.T) {
	forged := []struct{ group, worker string }{
		{"1000000000000", "0"},                      // 10^12
		{strconv.FormatInt(math.MaxInt64, 10), "0"}, // MaxInt64
		{"9223372036854775808", "0"},                // MaxInt64 + 1
		{strconv.Itoa(v1.MaxGroups), "0"},           // the first index that cannot exist
		{"-1", "0"}, {"+1", "0"}, {"01", "0"}, {" 1", "0"}, {"1e3", "0"}, {"0x10", "0"},
		{"1", "2"}, // worker beyond the group size of 2
		{"1", strconv.FormatInt(math.MaxInt64, 10)},
		{"1", "-1"},
	}
	pods := fixtures.Group("qwen", 0, 2, "r1")
	for i, f := range forged {
		p := fixtures.Pod("qwen", 0, 0, "r1").Label(lwsv1.GroupIndexLabelKey, f.group).Label(lwsv1.WorkerIndexLabelKey, f.worker).Obj()
		p.Name = "forged-" + strconv.Itoa(i)
		pods = append(pods, p)
	}
	groups := status.BuildGroups(pods, 2, 2, now)
	if len(groups) != 2 || groups[0].Index != 0 || groups[1].Index != 1 {
		t.Fatalf("got %d groups, want groups 0 and 1 only (the forged pods ignored)", len(groups))
	}
	for _, g := range groups {
		for _, p := range g.Pods {
			if strings.HasPrefix(p.Name, "forged-") {
				t.Errorf("group %d shows forged pod %s", g.Index, p.Name)
			}
		}
	}
	// The highest index that can exist is still a (surge) group.
	last := fixtures.Pod("qwen", v1.MaxGroups-1, 0, "r1").Obj()
	groups = status.BuildGroups([]corev1.Pod{last}, 1, 1, now)
	if len(groups) != 2 || groups[1].Index != v1.MaxGroups-1 || !groups[1].Surge {
		t.Errorf("group %d: got %d groups, want it shown as a surge group", v1.MaxGroups-1, len(groups))
	}
}

// A desired count or group size out of the API's bounds (a status read from anywhere) is clamped.
func TestBuildGroupsClampsDesiredAndSize(t *testing.T) {
	groups := status.BuildGroups(nil, math.MaxInt32, math.MaxInt32, now)
	if len(groups) != v1.MaxGroups || len(groups[0].Pods) != v1.MaxGroupSize {
		t.Errorf("got %d groups of %d pods, want %d of %d", len(groups), len(groups[0].Pods), v1.MaxGroups, v1.MaxGroupSize)
	}
	if groups := status.BuildGroups(nil, -5, -5, now); len(groups) != 0 {
		t.Errorf("negative desired: got %d groups, want none", len(groups))
	}
}

// Reasons come from pod messages, which a pod's author writes: they are bounded before they
// reach status.groups and the conditions.
func TestReasonsFromPodMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("é", 100000)
	pod := fixtures.Pod("qwen", 0, 0, "r1").Waiting("CreateContainerConfigError", long, 0, 0).Obj()
	groups := status.BuildGroups([]corev1.Pod{pod}, 1, 1, now)
	r := groups[0].Reason()
	if len(r) > status.MaxReasonLength || !strings.HasSuffix(r, "…") || !utf8Valid(r) {
		t.Errorf("reason of %d bytes (valid UTF-8: %v), want at most %d ending in …", len(r), utf8Valid(r), status.MaxReasonLength)
	}
	sum := status.Summarize(status.Input{Serving: fixtures.Serving("qwen", "default").Obj(), Pods: []corev1.Pod{pod}, UpdateRevision: "r1", TemplateRevision: "r1", Now: now})
	if len(sum.Degraded.Message) > 8192 {
		t.Errorf("Degraded message of %d bytes", len(sum.Degraded.Message))
	}
}

// Stored reasons hold no durations, so a pass while pods load writes nothing new; views render ages.
func TestGroupReasonsHoldNoDurations(t *testing.T) {
	pod := fixtures.Pod("qwen", 0, 0, "r1").NotReady().Obj()
	a := status.BuildGroups([]corev1.Pod{pod}, 1, 1, now)[0]
	b := status.BuildGroups([]corev1.Pod{pod}, 1, 1, now.Add(time.Minute))[0]
	if a.Reason() != b.Reason() || !a.Since().Equal(b.Since()) {
		t.Errorf("reason moved with the clock: %q then %q", a.Reason(), b.Reason())
	}
	if got := b.Detail(now.Add(time.Minute)); !strings.HasSuffix(got, "for 6m0s") {
		t.Errorf("detail = %q, want the age of the loading state", got)
	}
}

// A FailedCreate event of the LeaderWorkerSet or a StatefulSet, fresh and while pods are missing,
// is the Degraded reason; an old one, or one after every pod exists, is not.
func TestFailedCreateEventsBecomeTheDegradedReason(t *testing.T) {
	ms := fixtures.Serving("qwen", "default").Replicas(1).GroupSize(2).Obj()
	event := func(at time.Time) corev1.Event {
		return corev1.Event{Reason: status.EventFailedCreate, Type: corev1.EventTypeWarning, LastTimestamp: metaTime(at),
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "qwen"},
			Message:        `create Pod qwen-0 in StatefulSet qwen failed error: pods "qwen-0" is forbidden: violates PodSecurity "restricted:latest"`}
	}
	cases := []struct {
		name   string
		pods   []corev1.Pod
		events []corev1.Event
		want   string
	}{
		{"fresh, nothing created", nil, []corev1.Event{event(now.Add(-time.Minute))}, "True/" + v1.ReasonFailedCreate},
		{"stale", nil, []corev1.Event{event(now.Add(-time.Hour))}, "False/" + v1.ReasonAsExpected},
		{"every pod exists", fixtures.Group("qwen", 0, 2, "r1"), []corev1.Event{event(now.Add(-time.Minute))}, "False/" + v1.ReasonAsExpected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sum := status.Summarize(status.Input{Serving: ms, Pods: tc.pods, Events: tc.events, UpdateRevision: "r1", TemplateRevision: "r1", Now: now})
			if got := cond(sum.Degraded); got != tc.want {
				t.Fatalf("Degraded = %s (%s), want %s", got, sum.Degraded.Message, tc.want)
			}
			if tc.want == "True/"+v1.ReasonFailedCreate && !strings.Contains(sum.Degraded.Message, "violates PodSecurity") {
				t.Errorf("message %q does not name the cause", sum.Degraded.Message)
			}
		})
	}
}

// A problem the operator found (a name conflict) comes before what the pods say.
func TestProblemsComeFirst(t *testing.T) {
	ms := fixtures.Serving("qwen", "default").Obj()
	sum := status.Summarize(status.Input{Serving: ms, UpdateRevision: "r1", TemplateRevision: "r1", Now: now,
		Problems: []status.Problem{{Reason: v1.ReasonNameConflict, Message: "Service qwen-api is not ours"}}})
	if cond(sum.Degraded) != "True/"+v1.ReasonNameConflict || sum.Phase != v1.PhaseDegraded {
		t.Errorf("Degraded = %s, phase %s; want True/NameConflict, Degraded", cond(sum.Degraded), sum.Phase)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }
