package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// EngineType names the inference engine that serves the model.
// +kubebuilder:validation:Enum=vllm;sglang;custom
type EngineType string

const (
	EngineVLLM   EngineType = "vllm"
	EngineSGLang EngineType = "sglang"
	// EngineCustom runs the given image with only the given args: the operator generates no command line.
	EngineCustom EngineType = "custom"
)

// RestartPolicy says what happens to a group when one of its pods restarts or is lost.
// +kubebuilder:validation:Enum=RecreateGroupOnPodRestart;None
type RestartPolicy string

const (
	// RecreateGroupOnPodRestart recreates every pod of the group: a broken rank breaks the collective.
	RecreateGroupOnPodRestart RestartPolicy = "RecreateGroupOnPodRestart"
	// RestartPolicyNone recreates only the lost pod.
	RestartPolicyNone RestartPolicy = "None"
)

// RolloutStrategyType says how groups move to a new revision.
// +kubebuilder:validation:Enum=RollingUpdate;Recreate
type RolloutStrategyType string

const (
	// RollingUpdate replaces groups one batch at a time within maxSurge and maxUnavailable.
	RollingUpdate RolloutStrategyType = "RollingUpdate"
	// Recreate stops the old groups before new ones start: for clusters with no spare GPU for a surge.
	Recreate RolloutStrategyType = "Recreate"
)

// ModelServing serves one model on groups of pods (a leader and groupSize-1 workers each),
// rolled out group by group.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName={ms,lms},categories=llm
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.readyGroups`,description="Groups ready / desired"
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`,description="Groups on the update revision"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine.type`,priority=1
// +kubebuilder:printcolumn:name="Group-size",type=integer,JSONPath=`.spec.groupSize`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.updateRevision`,priority=1
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`,priority=1
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.size() <= 47",optionalOldSelf=true,message="metadata.name must be at most 47 characters: the StatefulSet of group 1999's workers is named <name>-1999 and its pods carry the label controller-revision-hash=<name>-1999-<hash of up to 10>, which must fit 63; choose a shorter name"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",optionalOldSelf=true,message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter and ending with a letter or digit), as the LeaderWorkerSet and its Service take it; e.g. qwen3-8b"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.metadata.name.matches('-[0-9]+$')",optionalOldSelf=true,message="metadata.name must not end in -<number>: LeaderWorkerSet names group N's objects <name>-N, which would collide with the groups of a serving named without the suffix; e.g. llama3b instead of llama-3"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.metadata.name.endsWith('-api')",optionalOldSelf=true,message="metadata.name must not end in -api: the serving <name> makes a Service <name>-api, which would collide with the LeaderWorkerSet Service of a serving named <name>-api; choose another name"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.metadata.name.matches('-(prefill|decode)$')",optionalOldSelf=true,message="metadata.name must not end in -prefill or -decode: a serving <name> with spec.roles names its LeaderWorkerSets <name>-prefill and <name>-decode, which would collide with this serving's; choose another name"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.roles) || self.metadata.name.size() <= 39",optionalOldSelf=true,message="metadata.name must be at most 39 characters for a serving with spec.roles: each role's LeaderWorkerSet is named <name>-prefill or <name>-decode, and its group 1999's pods carry the label controller-revision-hash=<name>-prefill-1999-<hash of up to 10>, which must fit 63; choose a shorter name"
//
// The name rules are checked at creation only (a name never changes): a serving made before them
// can still be updated, and deleted (its finalizer removed).
type ModelServing struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModelServingSpec   `json:"spec"`
	Status ModelServingStatus `json:"status,omitempty"`
}

// ModelServingList is a list of ModelServings.
//
// +kubebuilder:object:root=true
type ModelServingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModelServing `json:"items"`
}

// ModelServingSpec is what the user wants served.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.restart) || has(self.restart)",message="spec.restart cannot be removed once set: to restart again, set a new spec.restart.id"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.roles) == has(self.roles)",message="spec.roles cannot be added to or removed from an existing serving: a serving with roles runs a LeaderWorkerSet per role, one without runs one for the serving; create a new serving instead"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || (self.roles.exists(r, r.name == 'prefill') && self.roles.exists(r, r.name == 'decode'))",message="spec.roles must name both a prefill and a decode role: the prefill groups hand their KV cache to the decode groups, neither serves alone"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || self.roles.all(r, r.replicas == 0) || self.roles.all(r, r.replicas > 0)",message="spec.roles[].replicas must be 0 for every role or for none: prefill groups without decode groups (or the reverse) cannot serve; scale every role to 0 to stop the serving"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || !has(self.replicas) || self.replicas == 1",message="spec.replicas does not apply with spec.roles, where each role counts its own groups, so kubectl scale and autoscalers cannot change it: leave it at 1 and scale a role with kubectl llm scale NAME --role decode --replicas N (or set spec.roles[].replicas)"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || !has(self.rollout) || !has(self.rollout.partition) || self.rollout.partition == 0",message="spec.rollout.partition does not apply with spec.roles, as a group index names a different group in each role: set spec.roles[].rollout.partition to hold a canary in each role"
// +kubebuilder:validation:XValidation:rule="!has(self.roles) || !has(self.rollout) || !has(self.rollout.strategy) || self.rollout.strategy != 'Recreate' || self.roles.all(r, !has(r.rollout) || !has(r.rollout.maxSurge) || (type(r.rollout.maxSurge) == int ? r.rollout.maxSurge == 0 : r.rollout.maxSurge == '0%'))",message="spec.roles[].rollout.maxSurge must be 0 with strategy Recreate, which stops the old groups of every role before starting new ones"
type ModelServingSpec struct {
	// Model is what the engine serves, e.g. Qwen/Qwen3-0.6B or a path inside the weights volume.
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="spec.model must name the model to serve, e.g. Qwen/Qwen3-0.6B"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-')",message="spec.model must not start with '-': the engine would read it as an option; name the model, e.g. Qwen/Qwen3-0.6B"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[ \\t\\n\\r]')",message="spec.model must not contain whitespace or line breaks: name the model, e.g. Qwen/Qwen3-0.6B"
	// +kubebuilder:validation:MaxLength=512
	Model string `json:"model"`

	// Engine is the inference engine and its container settings.
	// +kubebuilder:default={}
	// +optional
	Engine EngineSpec `json:"engine,omitempty"`

	// Replicas is the number of groups. The scale subresource points here. With spec.roles it
	// stays 1 (each role counts its own groups) and the scale subresource cannot change it.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 1000",message="spec.replicas is the number of groups and must be between 0 and 1000"
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// GroupSize is the number of pods per group: one leader and groupSize-1 workers.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 64",message="spec.groupSize is the number of pods per group (leader + workers) and must be between 1 and 64"
	// +optional
	GroupSize int32 `json:"groupSize,omitempty"`

	// Resources are requested by every pod of a group. GPU requests equal limits.
	// +optional
	Resources ResourceSpec `json:"resources,omitempty"`

	// Weights, when set, adds a first phase that fetches the model weights into a volume.
	// +optional
	Weights *WeightsSpec `json:"weights,omitempty"`

	// Readiness says when a pod serves: the startup probe covers weight loading, the readiness probe serving.
	// +kubebuilder:default={}
	// +optional
	Readiness ReadinessSpec `json:"readiness,omitempty"`

	// RestartPolicy says what happens to a group when one of its pods restarts.
	// +kubebuilder:default=RecreateGroupOnPodRestart
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// Rollout says how groups move to a new revision.
	// +kubebuilder:default={}
	// +optional
	Rollout RolloutSpec `json:"rollout,omitempty"`

	// Restart is a declarative restart: a new id restarts every group through the rollout rules.
	// +optional
	Restart *RestartSpec `json:"restart,omitempty"`

	// Scheduling places the pods.
	// +optional
	Scheduling SchedulingSpec `json:"scheduling,omitempty"`

	// Roles split the serving into prefill and decode groups (disaggregated serving): each role
	// has its own groups, group size, resources, engine arguments, scheduling and rollout limits,
	// while the model, engine, weights, readiness, template and revision are the serving's. The
	// fields of spec above are the defaults of every role: a field a role sets replaces the
	// serving's for that role. A serving without roles is one role made of the fields above.
	// Roles are rolled out together: at no step does one role's share of ready groups on the
	// new revision run more than one step ahead of another's.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	// +optional
	Roles []RoleSpec `json:"roles,omitempty"`

	// Template is an optional pod template (a core/v1 PodTemplateSpec) merged last over the
	// generated one (strategic merge, containers by name; the engine container is named "engine").
	// It is an overlay, so no field of it is required: its schema is left open and the operator
	// decodes it per serving (DecodeTemplate), reporting what does not decode or merge as
	// Degraded/InvalidSpec on this serving alone. It is kept raw so that one serving's bad
	// template can never break the decoding, list or watch of every serving.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Template *runtime.RawExtension `json:"template,omitempty"`
}

// EngineSpec is the inference engine and its container.
//
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'custom' || (has(self.image) && self.image.size() > 0)",message="spec.engine.image is required when spec.engine.type is custom"
type EngineSpec struct {
	// Type is the engine: vllm, sglang or custom.
	// +kubebuilder:default=vllm
	// +optional
	Type EngineType `json:"type,omitempty"`

	// Image is the engine image. Empty means the operator's default for the engine type.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// Args are appended to the engine's generated arguments.
	// +optional
	Args []string `json:"args,omitempty"`

	// Env is added to the engine container of every pod.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Port is where the engine serves its OpenAPI-compatible HTTP API.
	// +kubebuilder:default=8000
	// +kubebuilder:validation:XValidation:rule="self >= 1 && self <= 65535",message="spec.engine.port must be a TCP port between 1 and 65535"
	// +optional
	Port int32 `json:"port,omitempty"`
}

// ResourceSpec is what every pod of a group requests.
type ResourceSpec struct {
	// GPUs is the number of nvidia.com/gpu per pod, requested and limited alike.
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 64",message="spec.resources.gpus must be a whole number of GPUs per pod between 0 and 64"
	// +optional
	GPUs *int32 `json:"gpus,omitempty"`

	// CPU per pod.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0')) && !quantity(string(self)).isGreaterThan(quantity('4096'))",message="spec.resources.cpu must be a positive CPU quantity of at most 4096, such as 8 or 500m"
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory per pod.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0')) && !quantity(string(self)).isGreaterThan(quantity('64Ti'))",message="spec.resources.memory must be a positive memory quantity of at most 64Ti, such as 64Gi"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// WeightsSpec is where the model weights come from.
type WeightsSpec struct {
	// Source is pvc://<claim>/<path>, hf://<repo> or s3://<bucket>/<path>.
	// +kubebuilder:validation:XValidation:rule="self.matches('^(pvc|hf|s3)://.+')",message="spec.weights.source must start with pvc://, hf:// or s3://, e.g. pvc://model-cache/qwen3"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-z0-9]+://-') && !self.matches('[ \\t\\n\\r]')",message="spec.weights.source must not start its claim, repository or bucket with '-' nor contain whitespace: the fetch command would read it as an option; e.g. hf://Qwen/Qwen3-0.6B"
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Source string `json:"source,omitempty"`

	// SharedMemory sizes /dev/shm (an in-memory emptyDir) for the engine's collectives.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0')) && !quantity(string(self)).isGreaterThan(quantity('64Ti'))",message="spec.weights.sharedMemory must be a positive memory quantity of at most 64Ti, such as 16Gi"
	// +optional
	SharedMemory *resource.Quantity `json:"sharedMemory,omitempty"`
}

// ReadinessSpec says when a pod serves.
type ReadinessSpec struct {
	// Path is the HTTP path of the readiness and startup probes.
	// +kubebuilder:default="/health"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="spec.readiness.path must be an HTTP path starting with /"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[ \\t\\n\\r]')",message="spec.readiness.path must not contain whitespace"
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Path string `json:"path,omitempty"`

	// StartupTimeout is how long a pod may take to load its weights before it is restarted.
	// +kubebuilder:default="20m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|ms|s|m|h)){1,4}$') && duration(self) > duration('0s') && duration(self) <= duration('24h')",message="spec.readiness.startupTimeout must be a positive duration of at most 24h such as 20m or 1h30m"
	// +optional
	StartupTimeout *metav1.Duration `json:"startupTimeout,omitempty"`
}

// RolloutSpec says how groups move to a new revision. Counts are groups, not pods.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxSurge) || !has(self.maxUnavailable) || !((type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%') && (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%'))",message="spec.rollout.maxSurge and spec.rollout.maxUnavailable cannot both be 0: the rollout could never replace a group; set maxUnavailable: 1 (no spare GPUs) or maxSurge: 1 (one spare group)"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || self.strategy != 'Recreate' || !has(self.maxSurge) || (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%')",message="spec.rollout.maxSurge must be 0 with strategy Recreate, which stops the old groups before starting new ones"
type RolloutSpec struct {
	// Strategy is RollingUpdate (default) or Recreate.
	// +kubebuilder:default=RollingUpdate
	// +optional
	Strategy RolloutStrategyType `json:"strategy,omitempty"`

	// MaxSurge is how many groups may exist above replicas during a rollout: a number or a percentage.
	// A surge needs a whole spare group of GPUs.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 1000 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="spec.rollout.maxSurge must be a number of groups between 0 and 1000 or a percentage between 0% and 100% such as 25%"
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// MaxUnavailable is how many groups may be unavailable during a rollout: a number or a percentage.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 1000 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="spec.rollout.maxUnavailable must be a number of groups between 0 and 1000 or a percentage between 0% and 100% such as 25%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Partition holds a canary: only groups with an index >= partition move to the new revision.
	// +kubebuilder:default=0
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 1000",message="spec.rollout.partition must be between 0 and 1000: groups with an index >= partition get the new revision"
	// +optional
	Partition *int32 `json:"partition,omitempty"`

	// Paused freezes template propagation: scaling still works, new revisions wait.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// ProgressDeadline is how long a rollout may make no progress before Progressing turns False
	// with reason ProgressDeadlineExceeded.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}([.][0-9]{1,9})?(ns|us|ms|s|m|h)){1,4}$') && duration(self) > duration('0s') && duration(self) <= duration('168h')",message="spec.rollout.progressDeadline must be a positive duration of at most 168h such as 30m or 1h"
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// RestartSpec is a declarative restart.
type RestartSpec struct {
	// ID identifies a restart request; any new value restarts every group, e.g. a timestamp. It
	// cannot contain "/role:", which v1.RoleRestartID puts between it and a role's restart id.
	// +kubebuilder:validation:XValidation:rule="self.trim().size() > 0",message="spec.restart.id must not be empty: set a new value, such as the current time, to restart every group"
	// +kubebuilder:validation:XValidation:rule="!self.contains('/role:')",message="spec.restart.id must not contain '/role:': it separates the serving's restart id from a role's (spec.roles[].restart.id) in the id a role's pods are created for, so a/role:b would read as restart a of the serving and b of the role; choose another value, such as the current time"
	// +kubebuilder:validation:MaxLength=253
	ID string `json:"id"`
}

// SchedulingSpec places the pods of every group.
type SchedulingSpec struct {
	// SchedulerName is the scheduler for the pods (e.g. a gang scheduler).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.scheduling.schedulerName must be a DNS subdomain (lower-case letters, digits, '-' and '.'), e.g. volcano"
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// NodeSelector is added to every pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are added to every pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PriorityClassName is the pods' priority class.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.scheduling.priorityClassName must name a PriorityClass: a DNS subdomain (lower-case letters, digits, '-' and '.')"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ExclusiveTopology is a node label key (e.g. topology.kubernetes.io/zone or a rack label):
	// each group then gets a topology domain of its own (LWS exclusive placement).
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="spec.scheduling.exclusiveTopology must be a node label key such as topology.kubernetes.io/zone"
	// +optional
	ExclusiveTopology string `json:"exclusiveTopology,omitempty"`
}

// Phase is the one-word summary of a ModelServing.
// +kubebuilder:validation:Enum=Pending;Progressing;Ready;Degraded;Failed
type Phase string

const (
	PhasePending     Phase = "Pending"
	PhaseProgressing Phase = "Progressing"
	PhaseReady       Phase = "Ready"
	PhaseDegraded    Phase = "Degraded"
	PhaseFailed      Phase = "Failed"
)

// ModelServingStatus is what the operator observed.
type ModelServingStatus struct {
	// ObservedGeneration is the generation of the spec the last successful pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Available, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Phase summarises the conditions in one word.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Replicas is the number of groups that exist, surge groups included.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of groups whose every pod is ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// UpdatedReplicas is the number of groups on the update revision.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// ReadyGroups is "ready/desired" for display, e.g. 1/2.
	// +optional
	ReadyGroups string `json:"readyGroups,omitempty"`

	// Selector selects the leader pod of every group, of every role with spec.roles: one pod per
	// group that status.replicas counts (for the scale subresource and autoscalers).
	// +optional
	Selector string `json:"selector,omitempty"`

	// CurrentRevision is the revision every group ran when the last rollout completed.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`

	// UpdateRevision is the revision of the current spec.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`

	// CollisionCount counts hash collisions of revision names.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// LastProgressTime is when the rollout last made progress: a group created, updated or ready.
	// ProgressDeadline counts from here.
	// +optional
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// RestartID is the last spec.restart.id carried out on every group.
	// +optional
	RestartID string `json:"restartID,omitempty"`

	// Groups is the readiness of each group, lowest index first, at most MaxStatusGroups entries.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=index
	// +optional
	Groups []GroupStatus `json:"groups,omitempty"`

	// Endpoint is the in-cluster address of the leaders: <service>.<namespace>.svc:<port>. With
	// spec.roles it is the decode role's Service; each role's is in status.roles.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Roles is the state of each role of a serving with spec.roles, in spec.roles's order of
	// names (prefill, decode); empty without roles. The counts above are their sums.
	// +kubebuilder:validation:MaxItems=2
	// +listType=map
	// +listMapKey=name
	// +optional
	Roles []RoleStatus `json:"roles,omitempty"`

	// Plan is the rollout planner's current step for a serving with spec.roles: where the roles
	// are on their way to the update revision and what the next step waits for. Views read it
	// rather than planning again; unset for a serving without roles, and before the operator
	// first planned.
	// +optional
	Plan *PlanStatus `json:"plan,omitempty"`
}

// PlanState says what the rollout planner is doing.
// +kubebuilder:validation:Enum=Complete;Progressing;Waiting;Paused;CanaryHeld
type PlanState string

const (
	// PlanComplete: every role has its groups, all on the update revision and ready.
	PlanComplete PlanState = "Complete"
	// PlanProgressing: the roles' LeaderWorkerSets are being moved to the step's targets.
	PlanProgressing PlanState = "Progressing"
	// PlanWaiting: the step's targets are what exists; the step's new groups of some role are not
	// ready yet, and every role waits for them.
	PlanWaiting PlanState = "Waiting"
	// PlanPaused: spec.rollout.paused holds every role where it is.
	PlanPaused PlanState = "Paused"
	// PlanCanaryHeld: every role has its canary groups and holds there until promoted.
	PlanCanaryHeld PlanState = "CanaryHeld"
)

// PlanStatus is the rollout planner's decision in the last pass. It holds no times or durations,
// so it changes only when the plan does.
type PlanStatus struct {
	// Revision is the revision the plan moves the groups to (status.updateRevision when written).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Revision string `json:"revision,omitempty"`
	// Step is the planned step the targets belong to, of Steps; both are 0 when no rollout is
	// under way (creation and scaling go straight to the targets).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	// +optional
	Step int32 `json:"step"`
	// Steps is the number of steps of the rollout.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	// +optional
	Steps int32 `json:"steps"`
	// State says what the plan is doing: Complete, Progressing, Waiting, Paused or CanaryHeld.
	// +optional
	State PlanState `json:"state,omitempty"`
	// Message says what the plan waits for or holds on ("decode: 1 of 2 new groups ready"); empty
	// when nothing holds it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
	// Restart is true when the plan restarts roles alone (spec.roles[].restart) and no rollout is
	// under way: Step and Steps are then the restarting role's own.
	// +optional
	Restart bool `json:"restart,omitempty"`
	// Roles are the step's target for each role, in the order of status.roles.
	// +kubebuilder:validation:MaxItems=2
	// +listType=map
	// +listMapKey=name
	// +optional
	Roles []RolePlanTarget `json:"roles,omitempty"`
}

// RolePlanTarget is what one role's groups should be at the plan's step.
type RolePlanTarget struct {
	// Name is the role.
	Name RoleName `json:"name"`
	// Replicas is the role's groups that should exist, surge groups included.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	Replicas int32 `json:"replicas"`
	// UpdatedReplicas is how many of them are on the plan's revision: the highest indices.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	UpdatedReplicas int32 `json:"updatedReplicas"`
}

// RoleStatus is the state of one role's groups.
type RoleStatus struct {
	// Name is the role: prefill or decode.
	Name RoleName `json:"name"`
	// Replicas is the number of the role's groups that exist, surge groups included.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of the role's groups whose every pod is ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	ReadyReplicas int32 `json:"readyReplicas"`
	// UpdatedReplicas is the number of the role's groups on the update revision.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2000
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReadyGroups is "ready/desired" for display, e.g. 2/6.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	ReadyGroups string `json:"readyGroups,omitempty"`
	// Groups is the readiness of each group of the role, lowest index first, at most
	// MaxStatusGroups entries. A group's index is its index within the role.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=index
	// +optional
	Groups []GroupStatus `json:"groups,omitempty"`
	// Endpoint is the in-cluster address of the role's leaders: <serving>-<role>-api.<namespace>.svc:<port>.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// RestartID is the last spec.roles[].restart.id carried out on every group of the role.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RestartID string `json:"restartID,omitempty"`
}

// MaxStatusGroups bounds status.groups so a large serving keeps a small object.
const MaxStatusGroups = 128

// Bounds of the counts in a spec; the CRD's CEL rules say the same.
const (
	// MaxReplicas is the most groups a serving may ask for (spec.replicas).
	MaxReplicas = 1000
	// MaxGroupSize is the most pods per group (spec.groupSize).
	MaxGroupSize = 64
	// MaxGroups bounds the group indices that can exist: replicas plus a surge of at most as
	// many again. A pod label claiming a group at or beyond it is not a group of ours.
	MaxGroups = 2 * MaxReplicas
	// MaxNameLength is the longest serving name whose derived names all fit (see the CEL rule
	// on metadata.name).
	MaxNameLength = 47
)

// GroupStatus is the readiness of one group.
type GroupStatus struct {
	// Index is the group's ordinal.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1999
	Index int32 `json:"index"`
	// Revision is the revision the group runs.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Ready is true when every pod of the group is ready.
	Ready bool `json:"ready"`
	// ReadyPods counts the ready pods of the group.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	ReadyPods int32 `json:"readyPods"`
	// Size is the number of pods the group should have.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	Size int32 `json:"size"`
	// Reason says why the group is not ready, e.g. "worker 1: Insufficient nvidia.com/gpu". It
	// holds no durations (they would change on every pass): Since says when the state began.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// Since is when the pod the reason is about entered its state (started loading, began
	// terminating…), for views to render as an age.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}
