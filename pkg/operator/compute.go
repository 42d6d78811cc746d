package operator

import (
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/roleplan"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
)

// intent is everything one pass means to write, decided by compute from what observe read.
// act only carries it out; report reads it too. Nothing in it has been sent anywhere yet.
type intent struct {
	// updateRev is the revision of the current spec; "" when spec.template does not decode.
	updateRev string
	// plan is what the LWS carries now: which revision's template and how many groups.
	plan Plan
	// specErr is why the spec cannot be served; nothing is written but the status then.
	specErr error
	// lws and service are the children to apply; nil when one must not be (a name conflict).
	lws     *lwsac.LeaderWorkerSetApplyConfiguration
	service *corev1ac.ServiceApplyConfiguration
	// lwsHash is lws's IntentHash when compute knows it ("" otherwise). lwsRebuild, when set,
	// builds lws, left unbuilt (lws nil) because the live LeaderWorkerSet carries lwsHash already
	// (see builtLWS): applyLWS builds it only if it must write.
	lwsHash    string
	lwsRebuild func() (*lwsac.LeaderWorkerSetApplyConfiguration, error)
	// createRevision records the update revision; renumber brings a recorded one back to the
	// top (rollout undo). At most one of them is set.
	createRevision *appsv1.ControllerRevision
	renumber       *revisionRenumber
	// prune are the revisions beyond the history limit, never one in use.
	prune []appsv1.ControllerRevision
	// notes are things worth a warning event: the pass went on, but not as the user may expect.
	notes []string

	// roles are the children of each role of a serving with spec.roles, in the planner's order
	// (lws and service above are then nil), and rolePlan the lockstep planner's decision.
	roles    []roleIntent
	rolePlan roleplan.Plan
}

// roleIntent is what one role's children should be; a nil child is not applied (a name conflict).
type roleIntent struct {
	name    v1.RoleName
	lws     *lwsac.LeaderWorkerSetApplyConfiguration
	service *corev1ac.ServiceApplyConfiguration
	// hash and rebuild are as intent's lwsHash and lwsRebuild, for the role's LeaderWorkerSet.
	hash    string
	rebuild func() (*lwsac.LeaderWorkerSetApplyConfiguration, error)
}

// revisionRenumber makes an existing revision the newest.
type revisionRenumber struct {
	name string
	to   int64
}

// computeInput is what compute needs besides the observed objects.
type computeInput struct {
	now          time.Time
	historyLimit int
	// built remembers the LeaderWorkerSets the passes built; nil: every pass builds its own.
	built *builtLWS
}

// compute decides, purely from what one pass observed, what the pass writes: the revision to
// record, the LeaderWorkerSet and Service to apply and the revisions to prune.
func compute(obs *observed, in computeInput) intent {
	ms := obs.serving
	updateSpec, err := revision.SpecOf(ms.Spec)
	if err != nil {
		return intent{specErr: err}
	}
	if err := ValidateSpec(ms); err != nil {
		return intent{specErr: err}
	}
	out := intent{updateRev: revision.Name(ms.Name, updateSpec)}
	if len(ms.Spec.Roles) > 0 {
		return computeRoles(obs, in, out, updateSpec)
	}

	lwsRev := ""
	if obs.lws != nil {
		lwsRev = status.TemplateRevision(obs.lws)
	}
	// Groups that still have pods, counted from their (bounded) LWS index labels: a pod that only
	// carries our name label is not a group a Recreate must wait for.
	existing := int32(len(status.BuildGroups(obs.pods, 0, int(ms.Spec.GroupSize), in.now)))
	if obs.lws != nil {
		existing = max(existing, obs.lws.Status.Replicas)
	}
	out.plan = PlanRollout(PlanInput{
		Strategy: ms.Spec.Rollout.Strategy, Paused: ms.Spec.Rollout.Paused, Desired: ptrOr(ms.Spec.Replicas, 1),
		UpdateRevision: out.updateRev, LWSRevision: lwsRev, ExistingGroups: existing,
	})

	// The update revision must make a valid LWS before it is recorded: a spec that cannot become
	// pods is terminal, whatever the LWS carries now. The LWS built here is the one applied when
	// the plan runs the update revision (most passes): it is built once.
	// When the inputs are those of an earlier pass and the live LWS carries what they built to,
	// that is known without building it again (see builtLWS).
	updateIn := LWSInput{Serving: ms, Revision: out.updateRev, RevisionSpec: updateSpec, Replicas: out.plan.Replicas}
	updateLWS, updateHash, err := in.built.build(updateIn, obs.lws)
	if err != nil {
		return intent{updateRev: out.updateRev, plan: out.plan, specErr: err}
	}

	revisions, err := out.record(obs, updateSpec)
	if err != nil {
		return intent{updateRev: out.updateRev, plan: out.plan, specErr: err}
	}

	switch {
	case obs.lwsConflict:
	case out.plan.TemplateRevision == out.updateRev:
		out.lws, out.lwsHash = updateLWS, updateHash
		if updateLWS == nil {
			out.lwsRebuild = func() (*lwsac.LeaderWorkerSetApplyConfiguration, error) { return DesiredLeaderWorkerSet(updateIn) }
		}
	default:
		if updateLWS == nil { // the live LWS carries the update revision, the plan holds another
			if updateLWS, err = DesiredLeaderWorkerSet(updateIn); err != nil {
				return intent{updateRev: out.updateRev, plan: out.plan, specErr: err}
			}
		}
		lws, note, err := desiredLWSFor(obs, out.plan, out.updateRev, updateLWS)
		if err != nil {
			return intent{updateRev: out.updateRev, plan: out.plan, specErr: err}
		}
		out.lws = lws
		if note != "" {
			out.notes = append(out.notes, note)
		}
	}
	if !obs.serviceConflict {
		out.service = DesiredService(ms)
	}
	out.prune = revision.ToPrune(revisions, in.limit(), out.updateRev, out.plan.TemplateRevision, ms.Status.CurrentRevision)
	return out
}

func (in computeInput) limit() int {
	if in.historyLimit <= 0 {
		return DefaultHistoryLimit
	}
	return in.historyLimit
}

// record decides the revision to record (the update revision, when no ControllerRevision holds
// it) or to renumber (an undo to a recorded one), and returns the revisions there will be.
func (out *intent) record(obs *observed, updateSpec revision.Spec) ([]appsv1.ControllerRevision, error) {
	ms := obs.serving
	revisions := obs.revisions
	next := revision.NextNumber(revisions)
	switch rec := findRevision(revisions, out.updateRev); {
	case rec == nil:
		cr, err := revision.NewControllerRevision(ms, updateSpec, next)
		if err != nil {
			return nil, err
		}
		out.createRevision = cr
		revisions = append(revisions[:len(revisions):len(revisions)], *cr)
	case rec.Revision != next-1 && ms.Status.UpdateRevision != out.updateRev:
		out.renumber = &revisionRenumber{name: rec.Name, to: next}
	}
	return revisions, nil
}

// desiredLWSFor is the LWS a plan that holds another revision than the update revision asks for,
// given the one the update revision makes. A plan that holds an older revision (paused, or a
// Recreate stopping the old groups) takes that revision's recorded spec; when its record is gone
// (deleted by hand), the LWS keeps the template it carries now, so the hold still holds.
func desiredLWSFor(obs *observed, plan Plan, updateRev string, updateLWS *lwsac.LeaderWorkerSetApplyConfiguration) (*lwsac.LeaderWorkerSetApplyConfiguration, string, error) {
	if rec := findRevision(obs.revisions, plan.TemplateRevision); rec != nil {
		spec, err := revision.Decode(rec)
		if err != nil {
			return nil, "", err
		}
		lws, err := DesiredLeaderWorkerSet(LWSInput{Serving: obs.serving, Revision: plan.TemplateRevision, RevisionSpec: spec, Replicas: plan.Replicas})
		return lws, "", err
	}
	if err := keepLiveTemplate(updateLWS, obs.lws); err != nil {
		return nil, "", err
	}
	return updateLWS, fmt.Sprintf("the ControllerRevision of revision %s, which the LeaderWorkerSet runs, is gone: "+
		"the LeaderWorkerSet keeps its pod template (%s); it moves to revision %s when the rollout can go on", plan.TemplateRevision, plan.Waiting, updateRev), nil
}

// keepLiveTemplate replaces the template of a desired LWS with the one the live LWS carries.
func keepLiveTemplate(desired *lwsac.LeaderWorkerSetApplyConfiguration, live *lwsv1.LeaderWorkerSet) error {
	raw, err := json.Marshal(live.Spec.LeaderWorkerTemplate)
	if err != nil {
		return err
	}
	tmpl := &lwsac.LeaderWorkerTemplateApplyConfiguration{}
	if err := json.Unmarshal(raw, tmpl); err != nil {
		return err
	}
	desired.Spec.LeaderWorkerTemplate = tmpl
	return nil
}

func findRevision(revs []appsv1.ControllerRevision, name string) *appsv1.ControllerRevision {
	for i := range revs {
		if revs[i].Name == name {
			return &revs[i]
		}
	}
	return nil
}

// requeueAfter is when to look again although nothing watched changed: soon while a rollout
// waits only for its leader StatefulSet (not watched) to settle, otherwise only when the progress
// deadline will pass, so the stall is reported on time. A second is added so the deadline has
// passed when the pass runs.
func requeueAfter(sum status.Summary, now time.Time) time.Duration {
	if settling(sum) {
		return settleRecheck
	}
	if sum.DeadlineAt.IsZero() {
		return 0
	}
	return max(sum.DeadlineAt.Sub(now), 0) + time.Second
}
