package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
)

// Observed is what a caller read of one serving: the serving, its LeaderWorkerSet (nil when it
// does not exist or could not be read) and its pods, with the FailedCreate events of its LWS and
// StatefulSets where the caller reads events. The operator, every command and the live view
// build the summary's input from it with InputOf, so one cluster state gets one answer.
type Observed struct {
	Serving *v1.ModelServing
	LWS     *lwsv1.LeaderWorkerSet
	Pods    []corev1.Pod
	Events  []corev1.Event
	// Roles are the LWS, pods and events of each role of a serving with spec.roles.
	Roles []RoleInput
}

// InputOf is the summary's input for what a caller observed at now. The update revision is the
// one the operator recorded in the status (a view never names one itself), and the template
// revision the one the LeaderWorkerSet carries (the update revision when no LWS was read). The
// operator, which knows both before its status says so, overrides them with WithRevisions.
func InputOf(o Observed, now time.Time) Input {
	in := Input{Serving: o.Serving, LWS: o.LWS, Pods: o.Pods, Events: o.Events, Roles: o.Roles, Now: now}
	if len(o.Serving.Spec.Roles) > 0 && o.Roles == nil {
		// A view that read the serving's pods but not each role's LeaderWorkerSet: the pods say
		// which role they are of.
		in.Roles = RoleInputs(o.Serving, o.Pods, nil)
	}
	in.UpdateRevision = o.Serving.Status.UpdateRevision
	in.TemplateRevision = TemplateRevision(o.LWS)
	if in.TemplateRevision == "" {
		in.TemplateRevision = in.UpdateRevision
	}
	if _, err := revision.SpecOf(o.Serving.Spec); err != nil {
		in.SpecError = err
	}
	return in
}

// RoleInputs splits a serving's pods by their role label into one RoleInput per role of its spec,
// in v1.RoleNames order, with the role's LeaderWorkerSet from lws (nil, or a role missing from it,
// when it was not read). A pod without a role label is not any role's.
func RoleInputs(ms *v1.ModelServing, pods []corev1.Pod, lws map[v1.RoleName]*lwsv1.LeaderWorkerSet) []RoleInput {
	var out []RoleInput
	for _, name := range v1.RoleNames() {
		if ms.Spec.Role(name) == nil {
			continue
		}
		ri := RoleInput{Name: name, LWS: lws[name]}
		for _, p := range pods {
			if p.Labels[naming.LabelRole] == string(name) {
				ri.Pods = append(ri.Pods, p)
			}
		}
		out = append(out, ri)
	}
	return out
}

// WithRevisions sets the revisions the operator computed in this pass: the update revision of
// the spec and the one whose template the LWS now carries.
func (in Input) WithRevisions(update, template string) Input {
	in.UpdateRevision, in.TemplateRevision = update, template
	return in
}

// TemplateRevision is the revision whose pod template a LeaderWorkerSet carries; "" for none.
func TemplateRevision(lws *lwsv1.LeaderWorkerSet) string {
	if lws == nil {
		return ""
	}
	return lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[v1.LabelRevision]
}
