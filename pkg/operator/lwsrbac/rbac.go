// Package lwsrbac declares, as RBAC markers only, what the upstream LeaderWorkerSet reconcilers and
// webhooks need when the operator hosts them (--lws=embedded). controller-gen turns them into the
// kubectl-llm-lws ClusterRole, which only the embedded install binds.
//
// Each rule is what a code path of sigs.k8s.io/lws v0.9.0 (pkg/controllers, pkg/utils) does, and
// nothing more: the e2e suite runs the operator as its ServiceAccount with exactly these rules,
// and docs/security.md lists the path behind each one. Upstream LWS's own role is broader (pod
// create/update, node update, Secrets for its certificate rotator); we need none of that.
package lwsrbac

// The LeaderWorkerSet reconciler: reads LWS, writes their status, and owns what it makes (owner
// references with blockOwnerDeletion need update on the owner's finalizers under
// OwnerReferencesPermissionEnforcement).
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=leaderworkerset.x-k8s.io,resources=leaderworkersets/finalizers,verbs=update
// Leader StatefulSets (server-side apply by the LWS reconciler) and worker StatefulSets (created by
// the pod reconciler, owned by their leader pod).
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// LWS revisions (pkg/utils/revision: create, list, prune).
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;delete
// The pod reconciler reads leader and worker pods, deletes a leader to recreate its group, and
// owns the worker StatefulSet by the leader pod (pods/finalizers).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
// Exclusive topology (leaderworkerset.sigs.k8s.io/exclusive-topology): the leader's node labels.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// The headless Service of each LWS (pkg/utils/controller).
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// The two webhook configurations the embedded install ships, and no other: the operator fills in
// their webhooks and CA bundle. It cannot create them (RBAC cannot limit create by name). The
// certificate rotator's informer reads (list, watch) webhook configurations; it cannot be limited
// to names either, and writes only ours.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;update;patch,resourceNames=kubectl-llm-lws
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=list;watch
// The installation's webhook CA and certificate (Secret kubectl-llm-webhook-certs, shipped empty),
// kept by the cert rotator: Secrets in the operator's namespace only.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;update,namespace=kubectl-llm-system
