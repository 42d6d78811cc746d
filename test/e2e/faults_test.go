package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The fault suite, first slice (issue 15): each case starts from a Ready serving of 2 groups × 2
// pods, injects a fault, lets the system recover, and checks the invariants of invariants_test.go.
// The quiet window is faultQuiet: 5 s in the test command (67 cases: each second of it is a
// minute of CI), the 30 s in the soak (FAULTS_SOAK=1), where every case waits it.
var faultQuiet = quietWindowFor(soak)

func quietWindowFor(soak bool) time.Duration {
	if soak {
		return 30 * time.Second
	}
	return 5 * time.Second
}

// restartOperator starts the operator again after a kill, failing the test when it cannot.
func restartOperator(t *testing.T) {
	t.Helper()
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
}

// underWay waits until at least one pod of the serving runs the update revision of generation gen.
func underWay(t *testing.T, ns, name string, gen int64) {
	t.Helper()
	rev := updateRevision(t, ns, name, gen)
	testenv.Eventually(t, settle, "the change to be under way", func() (bool, error) {
		for _, p := range pods(t, ns, name) {
			if p.Revision == rev {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestFaults(t *testing.T) {
	cases := []struct {
		name     string
		replicas int // groups once recovered
		inject   func(t *testing.T, ns, name string)
	}{
		{"operator SIGKILLed mid rolling update", 2, func(t *testing.T, ns, name string) {
			update(t, ns, name, newImage)
			underWay(t, ns, name, getServing(t, ns, name).Generation)
			fault(t, "SIGKILL the operator while groups are being replaced")
			op.kill()
			restartOperator(t)
		}},
		{"operator SIGKILLed right after a scale-up", 4, func(t *testing.T, ns, name string) {
			update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Replicas = ptr.To[int32](4) })
			fault(t, "SIGKILL the operator right after spec.replicas 2 -> 4")
			op.kill()
			restartOperator(t)
		}},
		{"operator down while a restart is carried out", 2, func(t *testing.T, ns, name string) {
			update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Restart = &v1.RestartSpec{ID: "fault-1"} })
			underWay(t, ns, name, getServing(t, ns, name).Generation)
			fault(t, "SIGKILL the operator mid restart and keep it down 5 s while pods come back")
			op.kill()
			time.Sleep(5 * time.Second) // down on purpose: the groups go on without it
			restartOperator(t)
			testenv.Eventually(t, settle, "the restart reported", func() (bool, error) {
				return getServing(t, ns, name).Status.RestartID == "fault-1", nil
			})
		}},
		{"LeaderWorkerSet deleted by hand", 2, func(t *testing.T, ns, name string) {
			fault(t, "delete the serving's LeaderWorkerSet")
			if err := kc.Delete(context.Background(), &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"LeaderWorkerSet scaled by hand", 2, func(t *testing.T, ns, name string) {
			fault(t, "set the LeaderWorkerSet's replicas to 1 by hand")
			testenv.Eventually(t, 10*time.Second, "hand edit", func() (bool, error) {
				lws := &lwsv1.LeaderWorkerSet{}
				if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, lws); err != nil {
					return false, err
				}
				lws.Spec.Replicas = ptr.To[int32](1)
				err := kc.Update(context.Background(), lws)
				return err == nil, err
			})
		}},
		{"Service deleted by hand", 2, func(t *testing.T, ns, name string) {
			fault(t, "delete the serving's Service")
			if err := kc.Delete(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-api"}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Service selector edited by hand, then the operator restarted", 2, func(t *testing.T, ns, name string) {
			fault(t, "edit the Service's selector, then SIGKILL and restart the operator")
			testenv.Eventually(t, 10*time.Second, "hand edit", func() (bool, error) {
				svc := &corev1.Service{}
				if err := kc.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name + "-api"}, svc); err != nil {
					return false, err
				}
				svc.Spec.Selector = map[string]string{v1.LabelName: "someone-else"}
				err := kc.Update(context.Background(), svc)
				return err == nil, err
			})
			op.kill()
			restartOperator(t)
		}},
		{"operator frozen (SIGSTOP) 15 s mid rolling update", 2, func(t *testing.T, ns, name string) {
			update(t, ns, name, newImage)
			underWay(t, ns, name, getServing(t, ns, name).Generation)
			fault(t, "SIGSTOP the operator for 15 s while groups are being replaced, then SIGCONT")
			op.signal(t, syscall.SIGSTOP)
			time.Sleep(15 * time.Second) // frozen on purpose: its watches and lease go stale
			op.signal(t, syscall.SIGCONT)
		}},
		{"the running revision's record deleted while paused", 2, func(t *testing.T, ns, name string) {
			current := getServing(t, ns, name).Status.CurrentRevision
			update(t, ns, name, func(ms *v1.ModelServing) { newImage(ms); ms.Spec.Rollout.Paused = true })
			gen := getServing(t, ns, name).Generation
			fault(t, "delete the ControllerRevision of the revision the paused LWS runs")
			if err := kc.Delete(context.Background(), &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: current}}); err != nil {
				t.Fatal(err)
			}
			rev := updateRevision(t, ns, name, gen)
			testenv.Consistently(t, 5*time.Second, "the pause to hold", func() error {
				for _, p := range pods(t, ns, name) {
					if p.Revision == rev {
						return fmt.Errorf("pod %s runs revision %s while the rollout is paused", p.Name, rev)
					}
				}
				return nil
			})
			update(t, ns, name, func(ms *v1.ModelServing) { ms.Spec.Rollout.Paused = false })
			testenv.Eventually(t, settle, "the rollout resumed onto "+rev, func() (bool, error) {
				ms := getServing(t, ns, name)
				return ms.Status.CurrentRevision == rev && ms.Status.Phase == v1.PhaseReady, nil
			})
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			name := "f" + string(rune('a'+i))
			faultCase(t, ns, newServing(ns, name, 2, 2, 1))
			copies := watchForCopies(t, ns, name)
			tc.inject(t, ns, name)
			checkInvariants(t, ns, name, tc.replicas, 2, copies, faultQuiet)
		})
	}
}
