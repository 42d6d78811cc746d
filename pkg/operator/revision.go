package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// RevisionSpec is the pod-affecting part of a ModelServing spec: what a revision records and
// what `rollout undo` writes back. Replicas, rollout settings and restart are not part of it.
type RevisionSpec struct {
	Model         string                  `json:"model"`
	Engine        v1.EngineSpec           `json:"engine"`
	GroupSize     int32                   `json:"groupSize"`
	Resources     v1.ResourceSpec         `json:"resources"`
	Weights       *v1.WeightsSpec         `json:"weights,omitempty"`
	Readiness     v1.ReadinessSpec        `json:"readiness"`
	RestartPolicy v1.RestartPolicy        `json:"restartPolicy"`
	Scheduling    v1.SchedulingSpec       `json:"scheduling"`
	Template      *corev1.PodTemplateSpec `json:"template,omitempty"`
}

// RevisionSpecOf takes the pod-affecting part of a spec. spec.template is decoded here (strictly,
// by v1.DecodeTemplate) and kept typed in the revision, so the recorded revisions and their hashes
// are the same as when the API type held a typed template. The error names the field.
func RevisionSpecOf(s v1.ModelServingSpec) (RevisionSpec, error) {
	s = *s.DeepCopy()
	tmpl, err := v1.DecodeTemplate(s.Template)
	if err != nil {
		return RevisionSpec{}, err
	}
	return RevisionSpec{Model: s.Model, Engine: s.Engine, GroupSize: s.GroupSize, Resources: s.Resources,
		Weights: s.Weights, Readiness: s.Readiness, RestartPolicy: s.RestartPolicy, Scheduling: s.Scheduling, Template: tmpl}, nil
}

// UpdateRevisionName is the revision name of a serving's current spec, or the decoding error.
func UpdateRevisionName(ms *v1.ModelServing) (string, error) {
	rs, err := RevisionSpecOf(ms.Spec)
	if err != nil {
		return "", err
	}
	return RevisionName(ms.Name, rs), nil
}

// Into writes the revision back into a spec, keeping replicas, rollout and restart.
func (r RevisionSpec) Into(s *v1.ModelServingSpec) error {
	tmpl, err := v1.EncodeTemplate(r.Template)
	if err != nil {
		return err
	}
	s.Model, s.Engine, s.GroupSize, s.Resources = r.Model, r.Engine, r.GroupSize, r.Resources
	s.Weights, s.Readiness, s.RestartPolicy, s.Scheduling, s.Template = r.Weights, r.Readiness, r.RestartPolicy, r.Scheduling, tmpl
	return nil
}

// RevisionHash is a stable hash of a revision spec.
func RevisionHash(r RevisionSpec) string {
	raw, _ := json.Marshal(r) // plain data: cannot fail
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:10]
}

// RevisionName is the ControllerRevision name of a revision: <serving>-<hash>.
func RevisionName(serving string, r RevisionSpec) string {
	return serving + "-" + RevisionHash(r)
}

// LabelRevisionHash marks a ControllerRevision with its hash.
const LabelRevisionHash = "serving.kubectl-llm.dev/revision-hash"

// RevisionListOptions select the ControllerRevisions of a serving. The StatefulSets LWS makes
// record revisions of their own that carry the pod template's labels (ours included); only ours
// carry LabelRevisionHash.
func RevisionListOptions(namespace, serving string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingLabels{v1.LabelName: serving}, client.HasLabels{LabelRevisionHash}}
}

// NewControllerRevision builds the ControllerRevision object that records a revision.
func NewControllerRevision(ms *v1.ModelServing, r RevisionSpec, number int64) (*appsv1.ControllerRevision, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	hash := RevisionHash(r)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ms.Name + "-" + hash,
			Namespace: ms.Namespace,
			Labels: map[string]string{
				v1.LabelName: ms.Name, LabelRevisionHash: hash, v1.LabelManagedBy: v1.ManagedByValue,
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef(ms)},
		},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: number,
	}, nil
}

// DecodeRevision reads the spec a ControllerRevision recorded.
func DecodeRevision(cr *appsv1.ControllerRevision) (RevisionSpec, error) {
	var r RevisionSpec
	if err := json.Unmarshal(cr.Data.Raw, &r); err != nil {
		return r, fmt.Errorf("decode revision %s: %w", cr.Name, err)
	}
	return r, nil
}

// SortRevisions orders revisions oldest first.
func SortRevisions(revs []appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		if revs[i].Revision != revs[j].Revision {
			return revs[i].Revision < revs[j].Revision
		}
		return revs[i].Name < revs[j].Name
	})
}

// RevisionsToPrune are the oldest revisions beyond the history limit, never one still in use.
func RevisionsToPrune(revs []appsv1.ControllerRevision, limit int, inUse ...string) []appsv1.ControllerRevision {
	sorted := append([]appsv1.ControllerRevision(nil), revs...)
	SortRevisions(sorted)
	used := map[string]bool{}
	for _, n := range inUse {
		used[n] = true
	}
	excess := len(sorted) - limit
	var out []appsv1.ControllerRevision
	for _, r := range sorted {
		if excess <= 0 {
			break
		}
		if used[r.Name] {
			continue
		}
		out = append(out, r)
		excess--
	}
	return out
}

// NextRevisionNumber is one more than the highest revision number.
func NextRevisionNumber(revs []appsv1.ControllerRevision) int64 {
	var n int64
	for _, r := range revs {
		n = max(n, r.Revision)
	}
	return n + 1
}

// ChangeCause returns a short description of a revision for `rollout history`.
func ChangeCause(r RevisionSpec) string {
	return "image=" + EngineImage(r.Engine) + " model=" + r.Model + " groupSize=" + strconv.Itoa(int(r.GroupSize))
}
