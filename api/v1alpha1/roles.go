package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RoleName names a role of a disaggregated serving. The names are fixed, not free: each one
// has its engine flags (vLLM's KV-transfer role, SGLang's disaggregation mode) and a place in
// the derived names (<serving>-<role>), whose length the name rules of ModelServing budget.
// A later role (an encoder, say) is added to this list.
// +kubebuilder:validation:Enum=prefill;decode
type RoleName string

const (
	// RolePrefill groups compute the prompt's KV cache and hand it to a decode group.
	RolePrefill RoleName = "prefill"
	// RoleDecode groups receive the KV cache and generate the tokens; clients talk to them.
	RoleDecode RoleName = "decode"
)

// RoleNames are the role names in the order the operator, the planner and the views list them.
func RoleNames() []RoleName { return []RoleName{RolePrefill, RoleDecode} }

// MaxRoles is the most roles a serving may have (spec.roles); the CRD says the same.
const MaxRoles = 2

// MaxRoleNameLength is the longest serving name with spec.roles: the longest role name
// ("prefill") and a dash are added to it in the role's LeaderWorkerSet name.
const MaxRoleNameLength = MaxNameLength - len("-prefill")

// RoleSpec is one role of a disaggregated serving: its own groups and what its pods need.
// Unset fields take the serving's value (spec.groupSize, spec.resources, spec.scheduling and
// spec.rollout's maxSurge and maxUnavailable), field by field.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.restart) || has(self.restart)",message="spec.roles[].restart cannot be removed once set: to restart the role again, set a new spec.roles[].restart.id"
type RoleSpec struct {
	// Name is prefill or decode.
	Name RoleName `json:"name"`

	// Replicas is the number of groups of the role.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 1000",message="spec.roles[].replicas is the number of groups of the role and must be between 0 and 1000"
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// GroupSize is the number of pods per group of the role; unset, spec.groupSize.
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 64",message="spec.roles[].groupSize is the number of pods per group of the role (leader + workers) and must be between 1 and 64"
	// +optional
	GroupSize *int32 `json:"groupSize,omitempty"`

	// Resources of every pod of the role; each field unset takes spec.resources's.
	// +optional
	Resources ResourceSpec `json:"resources,omitempty"`

	// Args are appended to the role's engine arguments, after spec.engine.args: the engine reads
	// the last of a repeated flag, so a flag here overrides the generated one (e.g. another
	// --kv-transfer-config).
	// +optional
	Args []string `json:"args,omitempty"`

	// Env is added to the engine container of the role's pods, after spec.engine.env.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Scheduling places the role's pods; each field unset takes spec.scheduling's.
	// +optional
	Scheduling SchedulingSpec `json:"scheduling,omitempty"`

	// Rollout holds the role's own rollout limits and canary partition.
	// +optional
	Rollout *RoleRolloutSpec `json:"rollout,omitempty"`

	// Restart is a declarative restart of this role alone: a new id restarts the role's groups
	// through its rollout limits, the other roles' groups stay as they are (spec.restart restarts
	// every role). status.roles[].restartID reports it done.
	// +optional
	Restart *RoleRestartSpec `json:"restart,omitempty"`
}

// RoleRestartSpec is a declarative restart of one role (spec.roles[].restart); it has the shape
// of RestartSpec, with its own messages.
type RoleRestartSpec struct {
	// ID identifies a restart request of the role; any new value restarts the role's groups.
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="spec.roles[].restart.id must not be empty: set a new value, such as the current time, to restart the role's groups"
	// +kubebuilder:validation:MaxLength=253
	ID string `json:"id"`
}

// RoleRolloutSpec is what a role may set of the rollout; the strategy, pause and deadline are
// the serving's, as the roles roll out together.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxSurge) || !has(self.maxUnavailable) || !((type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%') && (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%'))",message="spec.roles[].rollout.maxSurge and spec.roles[].rollout.maxUnavailable cannot both be 0: the rollout could never replace a group of the role; set maxUnavailable: 1 (no spare GPUs) or maxSurge: 1 (one spare group)"
type RoleRolloutSpec struct {
	// MaxSurge is how many groups of the role may exist above its replicas during a rollout;
	// unset, spec.rollout.maxSurge.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 1000 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="spec.roles[].rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage between 0% and 100% such as 25%"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// MaxUnavailable is how many groups of the role may be unavailable during a rollout;
	// unset, spec.rollout.maxUnavailable.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 1000 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="spec.roles[].rollout.maxUnavailable must be a number of groups between 0 and 1000 or a percentage between 0% and 100% such as 25%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Partition holds a canary of the role: only its groups with an index >= partition move to
	// the new revision, so replicas - partition groups of the role are the canary.
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 1000",message="spec.roles[].rollout.partition must be between 0 and 1000: the role's groups with an index >= partition get the new revision"
	// +optional
	Partition *int32 `json:"partition,omitempty"`
}

// Role is the role of spec.roles with that name, or nil.
func (s *ModelServingSpec) Role(name RoleName) *RoleSpec {
	for i := range s.Roles {
		if s.Roles[i].Name == name {
			return &s.Roles[i]
		}
	}
	return nil
}

// ForRole is the single-role spec that the groups of one role are made from: the serving's
// spec with the role's fields in place of the serving's (replicas, group size, each resource,
// each scheduling field, maxSurge, maxUnavailable, partition), the role's args and env after
// the engine's, and a restart id that changes with the serving's and with the role's
// (RoleRestartID). Its Roles is nil, so everything that builds or judges the groups of a serving
// without roles does the same for one role. The second result is false when the serving has no
// role of that name.
func (s ModelServingSpec) ForRole(name RoleName) (ModelServingSpec, bool) {
	r := s.Role(name)
	if r == nil {
		return ModelServingSpec{}, false
	}
	out := *s.DeepCopy()
	r = r.DeepCopy()
	out.Roles = nil
	out.Replicas = r.Replicas
	if r.GroupSize != nil {
		out.GroupSize = *r.GroupSize
	}
	out.Resources = mergeResources(out.Resources, r.Resources)
	out.Scheduling = mergeScheduling(out.Scheduling, r.Scheduling)
	out.Engine.Args = append(out.Engine.Args, r.Args...)
	out.Engine.Env = append(out.Engine.Env, r.Env...)
	out.Restart = roleRestart(s.Restart, r.Restart)
	// A partition is a group index, which means a different group in each role: the serving's
	// (which the CRD keeps at 0 with roles) never applies to a role.
	out.Rollout.Partition = nil
	if ro := r.Rollout; ro != nil {
		if ro.MaxSurge != nil {
			out.Rollout.MaxSurge = ro.MaxSurge
		}
		if ro.MaxUnavailable != nil {
			out.Rollout.MaxUnavailable = ro.MaxUnavailable
		}
		out.Rollout.Partition = ro.Partition
	}
	if out.Rollout.Partition == nil {
		zero := int32(0)
		out.Rollout.Partition = &zero
	}
	return out, true
}

// RoleRestartID is the restart id the pods of a role are created for: the serving's
// spec.restart.id, followed by the role's spec.roles[].restart.id when it is set, so that a new
// id of either restarts the role's groups, and a role never restarted keeps the serving's id
// (its pods stay as they are when the field is first used). "" when neither is set. The CRD
// refuses RoleRestartSeparator in the serving's id, so the first separator splits the result and
// two different pairs never give one id (the role's id may hold anything).
func RoleRestartID(serving, role string) string {
	if role == "" {
		return serving
	}
	return serving + RoleRestartSeparator + role
}

// RoleRestartSeparator separates the serving's restart id from the role's in RoleRestartID.
const RoleRestartSeparator = "/role:"

func roleRestart(serving *RestartSpec, role *RoleRestartSpec) *RestartSpec {
	s, r := "", ""
	if serving != nil {
		s = serving.ID
	}
	if role != nil {
		r = role.ID
	}
	if id := RoleRestartID(s, r); id != "" {
		return &RestartSpec{ID: id}
	}
	return nil
}

func mergeResources(base, role ResourceSpec) ResourceSpec {
	if role.GPUs != nil {
		base.GPUs = role.GPUs
	}
	if role.CPU != nil {
		base.CPU = role.CPU
	}
	if role.Memory != nil {
		base.Memory = role.Memory
	}
	return base
}

func mergeScheduling(base, role SchedulingSpec) SchedulingSpec {
	if role.SchedulerName != "" {
		base.SchedulerName = role.SchedulerName
	}
	if role.NodeSelector != nil {
		base.NodeSelector = role.NodeSelector
	}
	if role.Tolerations != nil {
		base.Tolerations = role.Tolerations
	}
	if role.PriorityClassName != "" {
		base.PriorityClassName = role.PriorityClassName
	}
	if role.ExclusiveTopology != "" {
		base.ExclusiveTopology = role.ExclusiveTopology
	}
	return base
}
