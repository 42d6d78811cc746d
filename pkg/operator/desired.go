package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
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
	tin := TemplateInput{Name: ms.Name, Revision: in.Revision, Spec: spec, Overlay: in.RevisionSpec.Template, Annotations: podAnnotations(ms)}
	if ms.Spec.Restart != nil {
		tin.RestartID = ms.Spec.Restart.ID
	}
	leader, err := PodTemplate(tin, Leader)
	if err != nil {
		return nil, err
	}
	worker, err := PodTemplate(tin, Worker)
	if err != nil {
		return nil, err
	}
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
	r := ms.Spec.Rollout
	rolling := lwsac.RollingUpdateConfiguration().
		WithPartition(ptr.Deref(r.Partition, 0)).
		WithMaxSurge(intOrDefault(r.MaxSurge, 0)).
		WithMaxUnavailable(intOrDefault(r.MaxUnavailable, 1))
	lws := lwsac.LeaderWorkerSet(ms.Name, ms.Namespace).
		WithLabels(childLabels(ms)).
		WithOwnerReferences(ownerRefAC(ms)).
		WithSpec(lwsac.LeaderWorkerSetSpec().
			WithReplicas(in.Replicas).
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
	return corev1ac.Service(naming.ServiceName(ms.Name), ms.Namespace).
		WithLabels(childLabels(ms)).
		WithOwnerReferences(ownerRefAC(ms)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(leaderSelector(ms.Name)).
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

func ownerRef(ms *v1.ModelServing) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1.GroupVersion.String(), Kind: "ModelServing", Name: ms.Name, UID: ms.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
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
