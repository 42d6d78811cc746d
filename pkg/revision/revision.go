// Package revision owns the revisions of a ModelServing: the pod-affecting part of its spec
// (Spec), its hash and name, the ControllerRevision that records it and how to read one back,
// the history order and pruning, and the change cause `rollout history` shows. The operator
// records revisions with it; the CLI reads them back and writes one into a spec (`rollout undo`,
// `canary abort`). The name of the revision the operator is rolling out is the serving's
// status.updateRevision: views read it from there and do not hash the spec themselves, so a
// newer plugin agrees with an older operator.
//
// Revision hashes must never change: a changed hash rolls every serving on upgrade (a test pins
// them). It imports only the API package and pkg/naming; never pkg/operator, pkg/status,
// pkg/cli or pkg/tui.
package revision

import (
	"bytes"
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
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// Spec is the pod-affecting part of a ModelServing spec: what a revision records and
// what `rollout undo` writes back. Replicas, rollout settings and restart are not part of it.
type Spec struct {
	Model         string                  `json:"model"`
	Engine        v1.EngineSpec           `json:"engine"`
	GroupSize     int32                   `json:"groupSize"`
	Resources     v1.ResourceSpec         `json:"resources"`
	Weights       *v1.WeightsSpec         `json:"weights,omitempty"`
	Readiness     v1.ReadinessSpec        `json:"readiness"`
	RestartPolicy v1.RestartPolicy        `json:"restartPolicy"`
	Scheduling    v1.SchedulingSpec       `json:"scheduling"`
	Template      *corev1.PodTemplateSpec `json:"template,omitempty"`
	// Roles are the pod-affecting fields of each role, in v1.RoleNames order, so that one revision
	// covers every role (a change to one role's pods rolls all of them together) and the order the
	// roles are listed in does not matter. Empty without roles, which keeps the hashes of servings
	// without roles what they were.
	Roles []Role `json:"roles,omitempty"`
}

// Role is the pod-affecting part of one role: not its replicas or rollout.
type Role struct {
	Name       v1.RoleName       `json:"name"`
	GroupSize  *int32            `json:"groupSize,omitempty"`
	Resources  v1.ResourceSpec   `json:"resources"`
	Args       []string          `json:"args,omitempty"`
	Env        []corev1.EnvVar   `json:"env,omitempty"`
	Scheduling v1.SchedulingSpec `json:"scheduling"`
}

// SpecOf takes the pod-affecting part of a spec. spec.template is decoded here (strictly,
// by v1.DecodeTemplate) and kept typed in the revision, so the recorded revisions and their hashes
// are the same as when the API type held a typed template. The error names the field.
func SpecOf(s v1.ModelServingSpec) (Spec, error) {
	s = *s.DeepCopy()
	tmpl, err := v1.DecodeTemplate(s.Template)
	if err != nil {
		return Spec{}, err
	}
	out := Spec{Model: s.Model, Engine: s.Engine, GroupSize: s.GroupSize, Resources: s.Resources,
		Weights: s.Weights, Readiness: s.Readiness, RestartPolicy: s.RestartPolicy, Scheduling: s.Scheduling, Template: tmpl}
	for _, name := range v1.RoleNames() {
		if r := s.Role(name); r != nil {
			out.Roles = append(out.Roles, Role{Name: r.Name, GroupSize: r.GroupSize, Resources: r.Resources,
				Args: r.Args, Env: r.Env, Scheduling: r.Scheduling})
		}
	}
	return out, nil
}

// Same reports whether two revision specs are one revision: equal in the encoding the hash is
// taken over. The CLI compares revisions by content with it rather than by a name it would hash
// itself: only the operator names revisions, and another version of it may hash differently.
func Same(a, b Spec) bool {
	ra, _ := json.Marshal(a) // plain data: cannot fail
	rb, _ := json.Marshal(b)
	return bytes.Equal(ra, rb)
}

// Into writes the revision back into a spec, keeping replicas, rollout and restart, and each
// role's replicas and rollout.
func (r Spec) Into(s *v1.ModelServingSpec) error {
	tmpl, err := v1.EncodeTemplate(r.Template)
	if err != nil {
		return err
	}
	s.Model, s.Engine, s.GroupSize, s.Resources = r.Model, r.Engine, r.GroupSize, r.Resources
	s.Weights, s.Readiness, s.RestartPolicy, s.Scheduling, s.Template = r.Weights, r.Readiness, r.RestartPolicy, r.Scheduling, tmpl
	for _, rr := range r.Roles {
		role := s.Role(rr.Name)
		if role == nil {
			s.Roles = append(s.Roles, v1.RoleSpec{Name: rr.Name})
			role = &s.Roles[len(s.Roles)-1]
		}
		role.GroupSize, role.Resources, role.Args, role.Env, role.Scheduling = rr.GroupSize, rr.Resources, rr.Args, rr.Env, rr.Scheduling
	}
	return nil
}

// Hash is a stable hash of a revision spec.
func Hash(r Spec) string {
	raw, _ := json.Marshal(r) // plain data: cannot fail
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:10]
}

// Name is the ControllerRevision name of a revision: <serving>-<hash>.
func Name(serving string, r Spec) string {
	return serving + "-" + Hash(r)
}

// LabelHash marks a ControllerRevision with its hash.
const LabelHash = "serving.kubectl-llm.dev/revision-hash"

// ListOptions select the ControllerRevisions of a serving. The StatefulSets LWS makes
// record revisions of their own that carry the pod template's labels (ours included); only ours
// carry LabelHash.
func ListOptions(namespace, serving string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingLabels{v1.LabelName: serving}, client.HasLabels{LabelHash}}
}

// NewControllerRevision builds the ControllerRevision object that records a revision.
func NewControllerRevision(ms *v1.ModelServing, r Spec, number int64) (*appsv1.ControllerRevision, error) {
	raw, err := canonicalJSON(r)
	if err != nil {
		return nil, err
	}
	hash := Hash(r)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ms.Name + "-" + hash,
			Namespace: ms.Namespace,
			Labels: map[string]string{
				v1.LabelName: ms.Name, LabelHash: hash, v1.LabelManagedBy: v1.ManagedByValue,
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, v1.GroupVersion.WithKind("ModelServing"))},
		},
		Data:     runtime.RawExtension{Raw: raw},
		Revision: number,
	}, nil
}

// canonicalJSON encodes v with its object keys sorted, as the API server re-encodes a
// ControllerRevision's data when it applies a JSON patch to the object: recorded in any other
// order, the data would look changed to its immutability check, and the garbage collector's
// patch that orphans the revision (kubectl delete --cascade=orphan) would be refused forever.
// Numbers keep their digits (UseNumber).
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}

// Decode reads the spec a ControllerRevision recorded.
func Decode(cr *appsv1.ControllerRevision) (Spec, error) {
	var r Spec
	if err := json.Unmarshal(cr.Data.Raw, &r); err != nil {
		return r, fmt.Errorf("decode revision %s: %w", cr.Name, err)
	}
	return r, nil
}

// Sort orders revisions oldest first.
func Sort(revs []appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		if revs[i].Revision != revs[j].Revision {
			return revs[i].Revision < revs[j].Revision
		}
		return revs[i].Name < revs[j].Name
	})
}

// ToPrune are the oldest revisions beyond the history limit, never one still in use.
func ToPrune(revs []appsv1.ControllerRevision, limit int, inUse ...string) []appsv1.ControllerRevision {
	sorted := append([]appsv1.ControllerRevision(nil), revs...)
	Sort(sorted)
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

// NextNumber is one more than the highest revision number.
func NextNumber(revs []appsv1.ControllerRevision) int64 {
	var n int64
	for _, r := range revs {
		n = max(n, r.Revision)
	}
	return n + 1
}

// ChangeCause returns a short description of a revision for `rollout history`.
func ChangeCause(r Spec) string {
	out := "image=" + naming.EngineImage(r.Engine) + " model=" + r.Model
	if len(r.Roles) == 0 {
		return out + " groupSize=" + strconv.Itoa(int(r.GroupSize))
	}
	// With roles each role has its group size; the serving's is only their default.
	for _, role := range r.Roles {
		size := r.GroupSize
		if role.GroupSize != nil {
			size = *role.GroupSize
		}
		out += " " + string(role.Name) + ".groupSize=" + strconv.Itoa(int(size))
	}
	return out
}
