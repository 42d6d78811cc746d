package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
)

// AnnotationAppliedHash on a child records the hash of the intent last applied to it, so an
// unchanged intent is not written again.
const AnnotationAppliedHash = "serving.kubectl-llm.dev/applied-hash"

// LWSInput is what the desired LeaderWorkerSet is built from.
type LWSInput struct {
	Serving *v1.ModelServing
	// Revision is the revision whose pod template the LWS carries (see Plan).
	Revision     string
	RevisionSpec revision.Spec
	// Replicas is the group count to ask of LWS (see Plan).
	Replicas int32
}

// DesiredLeaderWorkerSet builds the LeaderWorkerSet of a serving as an apply configuration.
// Rollout settings and network config are always set explicitly, whoever hosts LWS.
func DesiredLeaderWorkerSet(in LWSInput) (*lwsac.LeaderWorkerSetApplyConfiguration, error) {
	ms := in.Serving
	spec := *ms.Spec.DeepCopy()
	if err := in.RevisionSpec.Into(&spec); err != nil {
		return nil, err
	}
	tin := templateInputOf(ms, in.Revision, spec, in.RevisionSpec)
	leader, err := PodTemplate(tin, Leader)
	if err != nil {
		return nil, err
	}
	worker, err := PodTemplate(tin, Worker)
	if err != nil {
		return nil, err
	}
	r := ms.Spec.Rollout
	rolling := lwsac.RollingUpdateConfiguration().
		WithPartition(ptr.Deref(r.Partition, 0)).
		WithMaxSurge(intOrDefault(r.MaxSurge, 0)).
		WithMaxUnavailable(intOrDefault(r.MaxUnavailable, 1))
	return buildLWS(ms, ms.Name, childLabels(ms), spec, leader, worker, in.Replicas, rolling)
}

// RoleLWSInput is what the desired LeaderWorkerSet of one role is built from.
type RoleLWSInput struct {
	Serving *v1.ModelServing
	Role    v1.RoleName
	// Revision is the update revision: a role's LWS always carries it, the planner's partition
	// keeps the groups below it on the revision they run.
	Revision     string
	RevisionSpec revision.Spec
	// Target is the planner's shape for the role now (pkg/roleplan).
	Target roleplan.Target
}

// DesiredRoleLeaderWorkerSet builds the LeaderWorkerSet <serving>-<role> of a serving with
// spec.roles. Its replicas and partition are the planner's target; its own rollout limits never
// hold the planner back (maxSurge 0, as the planner adds surge groups through replicas, and a
// maxUnavailable of every group, so that the partition alone decides which groups move).
func DesiredRoleLeaderWorkerSet(in RoleLWSInput) (*lwsac.LeaderWorkerSetApplyConfiguration, error) {
	ms := in.Serving
	spec := *ms.Spec.DeepCopy()
	if err := in.RevisionSpec.Into(&spec); err != nil {
		return nil, err
	}
	tin := templateInputOf(ms, in.Revision, spec, in.RevisionSpec)
	leader, err := RolePodTemplate(tin, in.Role, Leader)
	if err != nil {
		return nil, err
	}
	worker, err := RolePodTemplate(tin, in.Role, Worker)
	if err != nil {
		return nil, err
	}
	eff, _ := spec.ForRole(in.Role) // RolePodTemplate has found the role
	rolling := lwsac.RollingUpdateConfiguration().
		WithPartition(in.Target.Partition()).
		WithMaxSurge(intstr.FromInt32(0)).
		WithMaxUnavailable(intstr.FromInt32(max(1, in.Target.Replicas)))
	return buildLWS(ms, naming.RoleWorkloadName(ms.Name, in.Role), roleChildLabels(ms, in.Role), eff, leader, worker, in.Target.Replicas, rolling)
}

func templateInputOf(ms *v1.ModelServing, rev string, spec v1.ModelServingSpec, rs revision.Spec) TemplateInput {
	tin := TemplateInput{Name: ms.Name, Revision: rev, Spec: spec, Overlay: rs.Template, Annotations: podAnnotations(ms)}
	if ms.Spec.Restart != nil {
		tin.RestartID = ms.Spec.Restart.ID
	}
	return tin
}

// buildLWS is the LeaderWorkerSet name of a serving (or of one of its roles, whose single-role
// spec is spec) with the given pod templates, groups and rolling update configuration.
func buildLWS(ms *v1.ModelServing, name string, labels map[string]string, spec v1.ModelServingSpec, leader, worker corev1.PodTemplateSpec,
	replicas int32, rolling *lwsac.RollingUpdateConfigurationApplyConfiguration) (*lwsac.LeaderWorkerSetApplyConfiguration, error) {
	leaderAC, err := templateApplyConfiguration(leader)
	if err != nil {
		return nil, err
	}
	workerAC, err := templateApplyConfiguration(worker)
	if err != nil {
		return nil, err
	}
	size := max(spec.GroupSize, 1)
	tmpl := lwsac.LeaderWorkerTemplate().
		WithSize(size).
		WithRestartPolicy(lwsRestartPolicy(spec.RestartPolicy))
	if size == 1 {
		tmpl.WithWorkerTemplate(leaderAC) // a group of one is just its leader
	} else {
		tmpl.WithLeaderTemplate(leaderAC).WithWorkerTemplate(workerAC)
	}
	lws := lwsac.LeaderWorkerSet(name, ms.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerRefAC(ms)).
		WithSpec(lwsac.LeaderWorkerSetSpec().
			WithReplicas(replicas).
			WithStartupPolicy(lwsv1.LeaderCreatedStartupPolicy).
			WithLeaderWorkerTemplate(tmpl).
			WithRolloutStrategy(lwsac.RolloutStrategy().
				WithType(lwsv1.RollingUpdateStrategyType).
				WithRollingUpdateConfiguration(rolling)).
			WithNetworkConfig(lwsac.NetworkConfig().WithSubdomainPolicy(lwsv1.SubdomainShared)))
	if key := spec.Scheduling.ExclusiveTopology; key != "" {
		lws.WithAnnotations(map[string]string{lwsv1.ExclusiveKeyAnnotationKey: key})
	}
	return lws, nil
}

// DesiredService builds the Service in front of the leaders, on the engine port.
func DesiredService(ms *v1.ModelServing) *corev1ac.ServiceApplyConfiguration {
	return buildService(ms, naming.ServiceName(ms.Name), childLabels(ms), leaderSelector(ms.Name))
}

// DesiredRoleService builds the Service <serving>-<role>-api in front of a role's leaders, so a
// router finds each role's endpoints.
func DesiredRoleService(ms *v1.ModelServing, role v1.RoleName) *corev1ac.ServiceApplyConfiguration {
	sel := leaderSelector(ms.Name)
	sel[naming.LabelRole] = string(role)
	return buildService(ms, naming.RoleServiceName(ms.Name, role), roleChildLabels(ms, role), sel)
}

func buildService(ms *v1.ModelServing, name string, labels, selector map[string]string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(name, ms.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerRefAC(ms)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(corev1ac.ServicePort().
				WithName("http").
				WithProtocol(corev1.ProtocolTCP).
				WithPort(ms.Spec.Engine.Port).
				WithTargetPort(intstr.FromString("http"))))
}

// IntentHash hashes an apply configuration; it is stamped on the child as AnnotationAppliedHash.
func IntentHash(ac any) string {
	raw, _ := json.Marshal(ac) // apply configurations are plain data
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:16]
}

func podAnnotations(ms *v1.ModelServing) map[string]string {
	if d, ok := ms.Annotations[v1.AnnotationSimulatedLoadDelay]; ok {
		return map[string]string{v1.AnnotationSimulatedLoadDelay: d}
	}
	return nil
}

func childLabels(ms *v1.ModelServing) map[string]string {
	return map[string]string{v1.LabelName: ms.Name, v1.LabelManagedBy: v1.ManagedByValue}
}

// roleChildLabels are the labels of a role's LWS and Service: the children cache holds them by
// the serving's name label; the role label says which role they are.
func roleChildLabels(ms *v1.ModelServing, role v1.RoleName) map[string]string {
	l := childLabels(ms)
	l[naming.LabelRole] = string(role)
	return l
}

func ownerRefAC(ms *v1.ModelServing) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1.GroupVersion.String()).WithKind("ModelServing").
		WithName(ms.Name).WithUID(ms.UID).
		WithController(true).WithBlockOwnerDeletion(true)
}

func lwsRestartPolicy(p v1.RestartPolicy) lwsv1.RestartPolicyType {
	if p == v1.RestartPolicyNone {
		return lwsv1.NoneRestartPolicy
	}
	return lwsv1.RecreateGroupOnPodRestart
}

func intOrDefault(v *intstr.IntOrString, def int) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt(def)
	}
	return *v
}

// templateApplyConfiguration converts a typed pod template into an apply configuration.
func templateApplyConfiguration(t corev1.PodTemplateSpec) (*corev1ac.PodTemplateSpecApplyConfiguration, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	ac := &corev1ac.PodTemplateSpecApplyConfiguration{}
	if err := json.Unmarshal(raw, ac); err != nil {
		return nil, err
	}
	return ac, nil
}
