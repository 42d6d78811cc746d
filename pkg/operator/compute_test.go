package operator

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/revision"
	"github.com/kubectl-llm/kubectl-llm/pkg/status"
	"github.com/kubectl-llm/kubectl-llm/test/fixtures"
)

var computeNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// recorded is the ControllerRevision a serving of this spec records, numbered n.
func recorded(t *testing.T, ms *v1.ModelServing, n int64) appsv1.ControllerRevision {
	t.Helper()
	cr, err := revision.NewControllerRevision(ms, fixtures.RevisionSpec(t, ms.Spec), n)
	if err != nil {
		t.Fatal(err)
	}
	return *cr
}

func revName(t testing.TB, ms *v1.ModelServing) string {
	t.Helper()
	return revision.Name(ms.Name, fixtures.RevisionSpec(t, ms.Spec))
}

// liveLWS is the LWS the operator applied for a serving, as the API server returns it.
func liveLWS(t testing.TB, ms *v1.ModelServing, replicas int32) *lwsv1.LeaderWorkerSet {
	t.Helper()
	ac, err := DesiredLeaderWorkerSet(LWSInput{Serving: ms, Revision: revName(t, ms), RevisionSpec: fixtures.RevisionSpec(t, ms.Spec), Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	lws := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Name: ms.Name, Namespace: ms.Namespace}}
	tmpl := lwsv1.LeaderWorkerTemplate{Size: ac.Spec.LeaderWorkerTemplate.Size}
	tmpl.WorkerTemplate.Labels = ac.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels
	tmpl.WorkerTemplate.Spec.Containers = nil
	lws.Spec.LeaderWorkerTemplate = tmpl
	lws.Spec.Replicas = ptr.To(replicas)
	lws.Status.Replicas = replicas
	return lws
}

func templateRevisionOf(in intent) string {
	if in.lws == nil || in.lws.Spec == nil || in.lws.Spec.LeaderWorkerTemplate == nil || in.lws.Spec.LeaderWorkerTemplate.WorkerTemplate == nil {
		return ""
	}
	return in.lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[v1.LabelRevision]
}

func TestComputeDecidesEveryWriteOfAPass(t *testing.T) {
	v1ms := fixtures.Serving("qwen", "ns").Replicas(2).GPUs(1).Image("vllm/vllm-openai:v1").Obj()
	v2ms := fixtures.Serving("qwen", "ns").Replicas(2).GPUs(1).Image("vllm/vllm-openai:v2").Obj()
	v1rev, v2rev := revName(t, v1ms), revName(t, v2ms)

	type want struct {
		templateRev string
		replicas    int32
		create      string // name of the revision created, "" for none
		createNum   int64
		renumber    string
		renumberTo  int64
		prune       []string
		noLWS       bool
		noService   bool
		note        string // a fragment of the only note, "" for none
		specErr     string // a fragment of the spec error, "" for none
	}
	cases := []struct {
		name  string
		obs   func() *observed
		limit int
		want  want
	}{
		{
			name: "a new serving records revision 1 and asks for every group on it",
			obs:  func() *observed { return &observed{serving: v1ms.DeepCopy()} },
			want: want{templateRev: v1rev, replicas: 2, create: v1rev, createNum: 1},
		},
		{
			name: "a converged serving records nothing and prunes nothing",
			obs: func() *observed {
				ms := v1ms.DeepCopy()
				ms.Status.UpdateRevision = v1rev
				return &observed{serving: ms, lws: liveLWS(t, v1ms, 2), revisions: []appsv1.ControllerRevision{recorded(t, v1ms, 1)}}
			},
			want: want{templateRev: v1rev, replicas: 2},
		},
		{
			name: "a new image records revision 2 and rolls the template",
			obs: func() *observed {
				ms := v2ms.DeepCopy()
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
				return &observed{serving: ms, lws: liveLWS(t, v1ms, 2), revisions: []appsv1.ControllerRevision{recorded(t, v1ms, 1)}}
			},
			want: want{templateRev: v2rev, replicas: 2, create: v2rev, createNum: 2},
		},
		{
			name: "paused, the LWS keeps the recorded old revision's template",
			obs: func() *observed {
				ms := v2ms.DeepCopy()
				ms.Spec.Rollout.Paused = true
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
				return &observed{serving: ms, lws: liveLWS(t, v1ms, 2), revisions: []appsv1.ControllerRevision{recorded(t, v1ms, 1)}}
			},
			want: want{templateRev: v1rev, replicas: 2, create: v2rev, createNum: 2},
		},
		{
			name: "paused with the old revision's record deleted by hand, the hold still holds (the live template)",
			obs: func() *observed {
				ms := v2ms.DeepCopy()
				ms.Spec.Rollout.Paused = true
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
				return &observed{serving: ms, lws: liveLWS(t, v1ms, 2)}
			},
			want: want{templateRev: v1rev, replicas: 2, create: v2rev, createNum: 1, note: "keeps its pod template (rollout paused)"},
		},
		{
			name: "Recreate scales the old revision to zero first, even with its record gone",
			obs: func() *observed {
				ms := v2ms.DeepCopy()
				ms.Spec.Rollout.Strategy = v1.Recreate
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
				return &observed{serving: ms, lws: liveLWS(t, v1ms, 2)}
			},
			want: want{templateRev: v1rev, replicas: 0, create: v2rev, createNum: 1, note: "Recreate"},
		},
		{
			name: "undo to a recorded older revision renumbers it instead of recording it again",
			obs: func() *observed {
				ms := v1ms.DeepCopy()
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v2rev, v2rev
				return &observed{serving: ms, lws: liveLWS(t, v2ms, 2), revisions: []appsv1.ControllerRevision{recorded(t, v1ms, 1), recorded(t, v2ms, 2)}}
			},
			want: want{templateRev: v1rev, replicas: 2, renumber: v1rev, renumberTo: 3},
		},
		{
			name: "beyond the history limit the oldest revisions go, never the one the LWS runs or the current one",
			obs: func() *observed {
				ms := v2ms.DeepCopy()
				ms.Spec.Rollout.Paused = true
				ms.Status.UpdateRevision, ms.Status.CurrentRevision = v1rev, v1rev
				old := fixtures.Serving("qwen", "ns").Replicas(2).GPUs(1).Image("vllm/vllm-openai:v0").Obj()
				return &observed{serving: ms, lws: liveLWS(t, v1ms, 2), revisions: []appsv1.ControllerRevision{recorded(t, v1ms, 1), recorded(t, old, 2)}}
			},
			limit: 2,
			want:  want{templateRev: v1rev, replicas: 2, create: v2rev, createNum: 3, prune: []string{"qwen-" + revision.Hash(fixtures.RevisionSpec(t, fixtures.Serving("qwen", "ns").Replicas(2).GPUs(1).Image("vllm/vllm-openai:v0").Obj().Spec))}},
		},
		{
			name: "children whose names are taken are not applied; the revision is still recorded",
			obs: func() *observed {
				return &observed{serving: v1ms.DeepCopy(), lwsConflict: true, serviceConflict: true}
			},
			want: want{create: v1rev, createNum: 1, noLWS: true, noService: true},
		},
		{
			name: "a template that does not decode is a spec error and nothing is written",
			obs: func() *observed {
				ms := v1ms.DeepCopy()
				ms.Spec.Template = fixtures.RawTemplate(`{"spec":{"containers":"not a list"}}`)
				return &observed{serving: ms}
			},
			want: want{specErr: "spec.template", noLWS: true, noService: true},
		},
		{
			name: "a node selector that is not a label is a spec error naming the field",
			obs: func() *observed {
				ms := v1ms.DeepCopy()
				ms.Spec.Scheduling.NodeSelector = map[string]string{"bad key!": "x"}
				return &observed{serving: ms}
			},
			want: want{specErr: "spec.scheduling.nodeSelector", noLWS: true, noService: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs()
			before := obs.serving.DeepCopy()
			got := compute(obs, computeInput{now: computeNow, historyLimit: tc.limit})
			if !equality.Semantic.DeepEqual(before, obs.serving) {
				t.Errorf("compute changed the observed serving")
			}
			w := tc.want
			if w.specErr != "" {
				if got.specErr == nil || !strings.Contains(got.specErr.Error(), w.specErr) {
					t.Fatalf("specErr = %v, want one naming %q", got.specErr, w.specErr)
				}
			} else if got.specErr != nil {
				t.Fatalf("unexpected spec error: %v", got.specErr)
			}
			if (got.lws == nil) != w.noLWS || (got.service == nil) != w.noService {
				t.Fatalf("lws applied %v, service applied %v; want %v, %v", got.lws != nil, got.service != nil, !w.noLWS, !w.noService)
			}
			if got.lws != nil {
				if rev := templateRevisionOf(got); rev != w.templateRev {
					t.Errorf("template revision = %s, want %s", rev, w.templateRev)
				}
				if r := ptr.Deref(got.lws.Spec.Replicas, -1); r != w.replicas {
					t.Errorf("replicas = %d, want %d", r, w.replicas)
				}
			}
			switch {
			case w.create == "" && got.createRevision != nil:
				t.Errorf("created revision %s, want none", got.createRevision.Name)
			case w.create != "" && (got.createRevision == nil || got.createRevision.Name != w.create || got.createRevision.Revision != w.createNum):
				t.Errorf("created %+v, want %s number %d", got.createRevision, w.create, w.createNum)
			}
			switch {
			case w.renumber == "" && got.renumber != nil:
				t.Errorf("renumbered %+v, want none", got.renumber)
			case w.renumber != "" && (got.renumber == nil || *got.renumber != revisionRenumber{w.renumber, w.renumberTo}):
				t.Errorf("renumbered %+v, want %s to %d", got.renumber, w.renumber, w.renumberTo)
			}
			var pruned []string
			for _, p := range got.prune {
				pruned = append(pruned, p.Name)
			}
			if strings.Join(pruned, ",") != strings.Join(w.prune, ",") {
				t.Errorf("pruned %v, want %v", pruned, w.prune)
			}
			switch {
			case w.note == "" && len(got.notes) > 0:
				t.Errorf("notes %q, want none", got.notes)
			case w.note != "" && (len(got.notes) != 1 || !strings.Contains(got.notes[0], w.note)):
				t.Errorf("notes %q, want one containing %q", got.notes, w.note)
			}
		})
	}
}

func TestRequeueIsAtTheProgressDeadlineOnly(t *testing.T) {
	cases := []struct {
		name string
		at   time.Time
		want time.Duration
	}{
		{"nothing waited for", time.Time{}, 0},
		{"the deadline ahead", computeNow.Add(10 * time.Minute), 10*time.Minute + time.Second},
		{"the deadline just passed", computeNow.Add(-time.Second), time.Second},
	}
	for _, tc := range cases {
		if got := requeueAfter(status.Summary{DeadlineAt: tc.at}, computeNow); got != tc.want {
			t.Errorf("%s: requeueAfter = %s, want %s", tc.name, got, tc.want)
		}
	}
}
