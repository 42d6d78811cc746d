// Package status is the one place that decides readiness and rollout progress of a ModelServing:
// the state and reason of each pod, the readiness of each group, the counts, conditions and phase
// of the serving, and whether a rollout is done. It is pure (no clients, no clock: callers pass
// the time) and is shared by the operator's status, `rollout status`, `describe` and the live view.
// It imports only the API packages (and may use pkg/naming, pkg/revision and pkg/roleplan, whose
// planner's input PlanInput counts from the groups); never the operator or a view.
package status

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// PodState is what a pod is doing, in the words a person debugging a serving would use.
type PodState string

const (
	PodReady       PodState = "Ready"
	PodLoading     PodState = "Loading"     // running, not ready yet: weights loading or engine starting
	PodPending     PodState = "Pending"     // not scheduled yet
	PodStarting    PodState = "Starting"    // scheduled, containers not running yet (pulling, creating)
	PodFailing     PodState = "Failing"     // CrashLoopBackOff, OOMKilled, image pull errors, Failed phase
	PodTerminating PodState = "Terminating" // deletion requested
	PodMissing     PodState = "Missing"     // expected in the group but does not exist
)

// Pod is one pod of a group as the views show it.
type Pod struct {
	Name        string
	WorkerIndex int // 0 is the leader
	State       PodState
	Reason      string // why it is not ready; empty when ready. It holds no durations: see Since.
	// Since is when the pod entered a state whose age matters (loading, terminating); zero otherwise.
	Since     time.Time
	Node      string
	Revision  string
	RestartID string // the restart id the pod was created for
	Restarts  int32
}

// Leader reports whether the pod is the group's leader.
func (p Pod) Leader() bool { return p.WorkerIndex == 0 }

// Role is "leader" or "worker N".
func (p Pod) Role() string {
	if p.Leader() {
		return "leader"
	}
	return "worker " + strconv.Itoa(p.WorkerIndex)
}

// Detail is the reason with the age of the state, for views: "not ready: loading weights /
// starting for 3m". Stored status holds Reason and Since instead, so it does not change every pass.
func (p Pod) Detail(now time.Time) string {
	if p.Since.IsZero() || p.Reason == "" {
		return p.Reason
	}
	d := now.Sub(p.Since).Round(time.Second)
	if d < 0 {
		d = 0
	}
	if p.State == PodTerminating && d >= LongTerminating {
		return fmt.Sprintf("%s for %s (finalizers or an unreachable node?)", p.Reason, d)
	}
	if p.State == PodTerminating {
		return p.Reason
	}
	return fmt.Sprintf("%s for %s", p.Reason, d)
}

// LongTerminating is how long a pod may take to terminate before the views call it stuck.
const LongTerminating = 2 * time.Minute

// insufficientGPU is the scheduler's wording for a group that cannot get GPUs.
const insufficientGPU = "Insufficient nvidia.com/gpu"

// ClassifyPod decides the state of one pod and, when it is not ready, why. The reason holds no
// duration; Detail renders one from PodSince.
func ClassifyPod(pod *corev1.Pod) (PodState, string) {
	if pod.DeletionTimestamp != nil {
		return PodTerminating, "Terminating"
	}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		return PodFailing, firstNonEmpty(pod.Status.Reason, "Failed") + messageSuffix(pod.Status.Message)
	case corev1.PodSucceeded:
		return PodFailing, "Completed: the engine exited"
	}
	// A pod on a node is scheduled, whatever its PodScheduled condition says: kube-scheduler patches
	// that condition by pod name, so its failure to bind a pod that was deleted meanwhile can land
	// on the same-named replacement (StatefulSet pods keep their names) after that was bound.
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && pod.Spec.NodeName == "" {
		return PodPending, unschedulableReason(c)
	}
	if reason, failing := containerProblem(pod); failing {
		return PodFailing, reason
	}
	if c := podCondition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
		return PodReady, ""
	}
	if pod.Status.Phase == corev1.PodRunning {
		return PodLoading, "not ready: loading weights / starting"
	}
	if reason := waitingReason(pod); reason != "" {
		return PodStarting, reason
	}
	if pod.Spec.NodeName == "" {
		return PodPending, "waiting to be scheduled"
	}
	return PodStarting, "ContainerCreating"
}

func unschedulableReason(c *corev1.PodCondition) string {
	msg := strings.TrimSpace(c.Message)
	if strings.Contains(msg, insufficientGPU) {
		return "FailedScheduling: " + insufficientGPU + " (" + msg + ")"
	}
	if msg == "" {
		return "FailedScheduling: " + firstNonEmpty(c.Reason, "Unschedulable")
	}
	return "FailedScheduling: " + msg
}

// containerProblem finds a container that keeps failing: the reasons a person must act on.
func containerProblem(pod *corev1.Pod) (string, bool) {
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "CrashLoopBackOff":
				return fmt.Sprintf("CrashLoopBackOff: container %s restarted %d times%s", cs.Name, cs.RestartCount, lastExit(cs)), true
			case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
				return w.Reason + ": " + firstNonEmpty(w.Message, "cannot pull "+cs.Image), true
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return w.Reason + messageSuffix(w.Message), true
			}
		}
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return fmt.Sprintf("OOMKilled: container %s ran out of memory (exit %d)", cs.Name, t.ExitCode), true
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" && !cs.Ready {
			return fmt.Sprintf("OOMKilled: container %s ran out of memory and restarted %d times", cs.Name, cs.RestartCount), true
		}
	}
	return "", false
}

func lastExit(cs corev1.ContainerStatus) string {
	t := cs.LastTerminationState.Terminated
	if t == nil {
		return ""
	}
	s := fmt.Sprintf(", last exit %d", t.ExitCode)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	return s
}

func waitingReason(pod *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason + messageSuffix(w.Message)
		}
	}
	return ""
}

// PodSince is when a pod entered a state whose age the views show: when it began terminating, or
// when its engine last started (loading weights); zero for other states.
func PodSince(pod *corev1.Pod, state PodState) time.Time {
	switch state {
	case PodTerminating:
		return pod.DeletionTimestamp.Time
	case PodLoading:
		started := pod.CreationTimestamp.Time
		if pod.Status.StartTime != nil {
			started = pod.Status.StartTime.Time
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if r := cs.State.Running; r != nil && !r.StartedAt.IsZero() && r.StartedAt.After(started) {
				started = r.StartedAt.Time
			}
		}
		return started
	}
	return time.Time{}
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func messageSuffix(msg string) string {
	if msg = strings.TrimSpace(msg); msg == "" {
		return ""
	}
	return ": " + msg
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Group is one leader and its workers.
type Group struct {
	Index     int
	Revision  string // the leader's revision; "" when the leader does not exist
	Size      int
	Pods      []Pod // leader first, then workers by index; missing pods included
	ReadyPods int
	Surge     bool // index >= desired replicas: a surge group during a rollout
	// Role is the role the group is of, in a serving with spec.roles ("" without); Index is its
	// index within the role.
	Role v1.RoleName
}

// Ready reports whether every pod of the group is ready.
func (g Group) Ready() bool { return g.ReadyPods == g.Size && len(g.Pods) == g.Size }

// Exists reports whether any pod of the group exists: a desired group nobody created yet has
// only missing pods.
func (g Group) Exists() bool { return g.Revision != "" || g.ReadyPods > 0 || !allMissing(g) }

// Updated reports whether every existing pod of the group runs the given revision and was
// created for the given restart id (empty when the serving was never restarted).
func (g Group) Updated(revision, restartID string) bool {
	if revision == "" || g.Revision != revision {
		return false
	}
	for _, p := range g.Pods {
		if p.State != PodMissing && (p.Revision != revision || p.RestartID != restartID) {
			return false
		}
	}
	return true
}

// WaitsForRoleRestart reports a group of a role that runs the given revision and the serving's
// restart id and waits only for its role's (spec.roles[].restart, v1.RoleRestartID): the role
// restarts it alone, without a rollout.
func (g Group) WaitsForRoleRestart(revision, servingRestartID string) bool {
	if revision == "" || g.Revision != revision {
		return false
	}
	for _, p := range g.Pods {
		if p.State == PodMissing {
			continue
		}
		if p.Revision != revision || (p.RestartID != servingRestartID && !strings.HasPrefix(p.RestartID, servingRestartID+v1.RoleRestartSeparator)) {
			return false
		}
	}
	return true
}

// Reason is why the group is not ready: its first unready pod's reason with the pod's role. It
// holds no duration (it is stored in status.groups); Since is when that pod's state began.
func (g Group) Reason() string {
	if p := g.firstUnready(); p != nil {
		return bounded(p.Role()+": "+p.Reason, MaxReasonLength)
	}
	return ""
}

// Since is when the state of the pod Reason is about began; zero when that has no age.
func (g Group) Since() time.Time {
	if p := g.firstUnready(); p != nil {
		return p.Since
	}
	return time.Time{}
}

// Detail is Reason with the age of the state, for views.
func (g Group) Detail(now time.Time) string {
	if p := g.firstUnready(); p != nil {
		return bounded(p.Role()+": "+p.Detail(now), MaxReasonLength)
	}
	return ""
}

func (g Group) firstUnready() *Pod {
	for i := range g.Pods {
		if g.Pods[i].State != PodReady {
			return &g.Pods[i]
		}
	}
	return nil
}

// MaxReasonLength bounds a reason built from pod messages, which anyone who may create a pod writes.
const MaxReasonLength = 512

// bounded cuts s to at most n bytes, on a rune boundary, marking the cut.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// BuildGroups sorts the pods of one serving into groups by the LWS group and worker index labels.
// desired is spec.replicas and size spec.groupSize: groups below desired always appear (with missing
// pods), groups above it only when they have pods (surge groups).
//
// The labels are untrusted (anyone who may create a pod can set them): a pod whose group index is
// not one a serving can have (0 <= group < v1.MaxGroups) or whose worker index is not one of the
// group (0 <= worker < size) is ignored, so the work done is bounded by the pods given, never by
// the indices they claim.
func BuildGroups(pods []corev1.Pod, desired, size int, now time.Time) []Group {
	desired = min(max(desired, 0), v1.MaxGroups)
	size = min(max(size, 1), v1.MaxGroupSize)
	byGroup := map[int]map[int]Pod{}
	created := map[int]map[int]time.Time{} // of the pods in byGroup
	for i := range pods {
		pod := &pods[i]
		gi, ok1 := index(pod.Labels[lwsv1.GroupIndexLabelKey], v1.MaxGroups)
		wi, ok2 := index(pod.Labels[lwsv1.WorkerIndexLabelKey], size)
		if !ok1 || !ok2 {
			continue // not (yet) labelled by the LWS webhook, or not a group member that can exist
		}
		state, reason := ClassifyPod(pod)
		p := Pod{Name: pod.Name, WorkerIndex: wi, State: state, Reason: bounded(reason, MaxReasonLength), Since: PodSince(pod, state),
			Node: pod.Spec.NodeName, Revision: pod.Labels[v1.LabelRevision], RestartID: pod.Annotations[v1.AnnotationRestartID], Restarts: restarts(pod)}
		if byGroup[gi] == nil {
			byGroup[gi], created[gi] = map[int]Pod{}, map[int]time.Time{}
		}
		if old, ok := byGroup[gi][wi]; ok && old.State != PodTerminating && state == PodTerminating {
			continue // a replacement exists: show it, not the pod on its way out
		}
		byGroup[gi][wi], created[gi][wi] = p, pod.CreationTimestamp.Time
	}
	for gi, members := range byGroup {
		leader, ok := members[0]
		if !ok || leader.State == PodTerminating {
			continue
		}
		for wi, p := range members {
			if wi > 0 && p.State != PodTerminating && previousLeaders(leader, p, created[gi][0], created[gi][wi]) {
				members[wi] = Pod{Name: p.Name, WorkerIndex: wi, State: PodMissing,
					Reason: "not created yet (the pod there is the previous leader's, being replaced)", Node: p.Node, Revision: p.Revision}
			}
		}
	}
	indices := make([]int, 0, desired+len(byGroup))
	for gi := 0; gi < desired; gi++ {
		indices = append(indices, gi)
	}
	for gi := range byGroup {
		if gi >= desired {
			indices = append(indices, gi)
		}
	}
	sort.Ints(indices)
	groups := make([]Group, 0, len(indices))
	for _, gi := range indices {
		members := byGroup[gi]
		g := Group{Index: gi, Size: size, Surge: gi >= desired}
		for wi := 0; wi < size; wi++ {
			p, ok := members[wi]
			if !ok {
				p = Pod{WorkerIndex: wi, State: PodMissing, Reason: "not created yet"}
				if wi > 0 && members[0].State != PodReady && members[0].State != "" {
					p.Reason = "not created yet (workers follow the leader)"
				}
			}
			if p.State == PodReady {
				g.ReadyPods++
			}
			g.Pods = append(g.Pods, p)
		}
		if leader, ok := members[0]; ok {
			g.Revision = leader.Revision
		}
		groups = append(groups, g)
	}
	return groups
}

// previousLeaders reports whether a worker pod is of the group's previous leader: one of another
// revision than the leader's, or created more than olderWorker before the leader. LWS makes a
// leader's workers (their StatefulSet, owned by the leader pod) only once the leader pod exists,
// and the previous leader's go with it a moment after (the garbage collector deletes that
// StatefulSet): until then such a worker may still be Ready, but the group is not, and counting it
// showed a group Ready, then not Ready, then Ready again at every step of a rollout.
func previousLeaders(leader, worker Pod, leaderCreated, workerCreated time.Time) bool {
	if leader.Revision != "" && worker.Revision != "" && leader.Revision != worker.Revision {
		return true
	}
	return !leaderCreated.IsZero() && !workerCreated.IsZero() && workerCreated.Add(olderWorker).Before(leaderCreated)
}

// WorkerOfPreviousLeader reports whether worker, a pod of leader's group, is of the group's
// previous leader (see previousLeaders): from the pods' revision labels and creation times.
func WorkerOfPreviousLeader(leader, worker *corev1.Pod) bool {
	return previousLeaders(Pod{Revision: leader.Labels[v1.LabelRevision]}, Pod{Revision: worker.Labels[v1.LabelRevision]},
		leader.CreationTimestamp.Time, worker.CreationTimestamp.Time)
}

// olderWorker is how much earlier than its leader a worker must have been created to be taken as
// the previous leader's. Creation times are whole seconds of the API server's clock (of each API
// server, in a control plane of several): a worker of this leader must never look older than it,
// or its group would never be Ready.
const olderWorker = 2 * time.Second

// index parses an index label: a canonical decimal in [0, limit).
func index(label string, limit int) (int, bool) {
	if label == "" || len(label) > 10 || (len(label) > 1 && label[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(label)
	if err != nil || n < 0 || n >= limit || strconv.Itoa(n) != label {
		return 0, false
	}
	return n, true
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
