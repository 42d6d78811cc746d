package naming

import (
	"strings"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// Labels of the pods of a serving with spec.roles. Inference routers keep a request within one
// revision that has every role ready, and pick a prefill and a decode endpoint, by pod labels;
// docs/concepts.md ("Labels for routers") says which router reads which, and why these.
const (
	// LabelRole is the role (prefill or decode) of a pod, its group and its LeaderWorkerSet.
	LabelRole = "serving.kubectl-llm.dev/role"
	// LabelLLMDRole is the role label llm-d's router reads to pick a prefill and a decode
	// endpoint (its prefill-filter and decode-filter plugins); its values are the role names.
	LabelLLMDRole = "llm-d.ai/role"
	// LabelDisaggregatedRole and LabelDisaggregatedRevision are the role and revision labels of
	// LWS's DisaggregatedSet (sigs.k8s.io/lws/api/disaggregatedset/v1 RoleLabelKey and
	// RevisionLabelKey), which llm-d's disaggregatedset-rollout-screener reads by default to pair
	// a prefill and a decode pod only within one revision that has every role ready. The
	// revision's value is the serving's revision (v1.LabelRevision's), shared by every role.
	LabelDisaggregatedRole     = "disaggregatedset.x-k8s.io/role"
	LabelDisaggregatedRevision = "disaggregatedset.x-k8s.io/revision"
)

// RolePodLabels are the labels every pod of a role on revision rev carries besides the
// serving's own. They sit in the role's pod templates: each value is fixed by the role or
// changes exactly when v1.LabelRevision does, so they never roll a group by themselves.
func RolePodLabels(role v1.RoleName, rev string) map[string]string {
	return map[string]string{LabelRole: string(role), LabelLLMDRole: string(role),
		LabelDisaggregatedRole: string(role), LabelDisaggregatedRevision: rev}
}

// RoleWorkloadName is the name of a role's LeaderWorkerSet (and so of its leader StatefulSet
// and headless Service): <serving>-<role>. A serving's name cannot end in -prefill or -decode
// (the CRD refuses it), so it never is another serving's; the CRD also keeps a serving with
// roles to v1.MaxRoleNameLength characters so that every name derived from this one fits.
func RoleWorkloadName(serving string, role v1.RoleName) string { return serving + "-" + string(role) }

// RoleServiceName is the name of the Service in front of a role's leaders: <serving>-<role>-api.
func RoleServiceName(serving string, role v1.RoleName) string {
	return ServiceName(RoleWorkloadName(serving, role))
}

// RoleOfWorkload is the serving and role a role's LeaderWorkerSet or StatefulSet belongs to,
// by name: <serving>-<role> and group N's worker StatefulSet <serving>-<role>-N. For any other
// name it returns "", "".
func RoleOfWorkload(kind, name string) (serving string, role v1.RoleName) {
	base := ServingOfWorkload(kind, name)
	for _, r := range v1.RoleNames() {
		if s, ok := strings.CutSuffix(base, "-"+string(r)); ok && s != "" {
			return s, r
		}
	}
	return "", ""
}
