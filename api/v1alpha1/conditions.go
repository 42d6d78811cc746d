package v1alpha1

// Condition types of a ModelServing (metav1.Condition.Type).
const (
	// ConditionAvailable is True when at least replicas - maxUnavailable groups are ready.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while groups move to the update revision or the group count changes,
	// and also when that finished (reason RolloutComplete); False on ProgressDeadlineExceeded.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the serving cannot reach its spec without help: an invalid spec,
	// groups that cannot be scheduled, pods that keep failing.
	ConditionDegraded = "Degraded"
)

// Condition reasons (metav1.Condition.Reason).
const (
	// Available.
	ReasonGroupsAvailable   = "MinimumGroupsAvailable"
	ReasonGroupsUnavailable = "GroupsUnavailable"
	ReasonNoGroups          = "NoGroupsDesired"

	// Progressing.
	ReasonRollingOut               = "RollingOut"
	ReasonScaling                  = "Scaling"
	ReasonRolloutComplete          = "RolloutComplete"
	ReasonRolloutPaused            = "RolloutPaused"
	ReasonCanaryHeld               = "CanaryHeld"
	ReasonRestarting               = "Restarting"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

	// Degraded.
	ReasonAsExpected      = "AsExpected"
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonInsufficientGPU = "InsufficientGPU"
	ReasonUnschedulable   = "Unschedulable"
	ReasonGroupsFailing   = "GroupsFailing"
	ReasonApplyFailed     = "ApplyFailed"
	// ReasonNameConflict: an object with the name of one of the serving's children exists and is
	// not controlled by this serving (a user's own Service, a hand-made LeaderWorkerSet, another
	// controller's object). The operator leaves it alone until it is renamed or removed.
	ReasonNameConflict = "NameConflict"
	// ReasonFailedCreate: the LeaderWorkerSet or StatefulSet controller cannot create the groups'
	// pods or StatefulSets (Pod Security, a missing PriorityClass, a quota, an invalid field).
	ReasonFailedCreate = "FailedCreate"
	// ReasonLeaderWorkerSetMissing: the API server does not serve LeaderWorkerSet (its CRD is not
	// installed or was removed), so the serving's groups cannot be applied.
	ReasonLeaderWorkerSetMissing = "LeaderWorkerSetMissing"
)

// Labels and annotations shared by the operator, the plugin and the simulated cluster.
const (
	// LabelName is set on every child (LeaderWorkerSet, Service, ControllerRevision) and pod of a serving.
	LabelName = "serving.kubectl-llm.dev/name"
	// LabelRevision is the ModelServing revision a pod template (and so a group) was made from.
	LabelRevision = "serving.kubectl-llm.dev/revision"
	// LabelManagedBy marks objects the operator manages.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "kubectl-llm"

	// AnnotationRestartID on the pod template carries spec.restart.id, so a new id rolls every group.
	AnnotationRestartID = "serving.kubectl-llm.dev/restart-id"
	// AnnotationSimulatedLoadDelay on a ModelServing is copied to its pods for the simulated cluster,
	// whose stages keep a pod Running but not Ready for that long (a stand-in for weight loading).
	AnnotationSimulatedLoadDelay = "serving.kubectl-llm.dev/simulated-load-delay"

	// AnnotationWorkerRetry on a group's worker StatefulSet is written by the operator when a
	// previous leader's worker pod, which held the name of one of its pods, is gone after holding
	// it for a while: the update makes the StatefulSet controller try again at once, instead of
	// after its backoff (see the operator's workerretry.go). Its value is that pod's UID.
	AnnotationWorkerRetry = "serving.kubectl-llm.dev/worker-retry"

	// FinalizerChildren keeps a ModelServing until its children are gone.
	FinalizerChildren = "serving.kubectl-llm.dev/children"

	// FieldManager is the server-side apply field manager of the operator and the plugin.
	FieldManager = "kubectl-llm"
)
