package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The Service of a new serving is created beside its pass (the API server's ClusterIP allocator
// makes Service creates wait for each other). A create the API server refuses, here by an
// admission policy, is still reported on the serving, which still gets its LeaderWorkerSet; once
// the policy goes, the Service is made and the report goes.
func TestARefusedServiceIsReportedAndMadeOnceAllowed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-services-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no Services here (test policy)"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	probe := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	testenv.Eventually(t, 30*time.Second, "the policy in force", func() (bool, error) {
		err := env.Client.Create(ctx, probe.DeepCopy())
		if err == nil {
			return false, env.Client.Delete(ctx, probe)
		}
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})

	if err := env.Client.Create(ctx, serving(ns, "qwen")); err != nil {
		t.Fatal(err)
	}
	waitLWS(t, ns, "qwen", func(*lwsv1.LeaderWorkerSet) bool { return true })
	svcName := naming.ServiceName("qwen")
	got := waitServing(t, ns, "qwen", "the refused Service reported", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, svcName)
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionDegraded)
	t.Logf("reported: %s: %s", c.Reason, c.Message)
	if !strings.Contains(c.Message, "no Services here") {
		t.Errorf("the report %q does not say why the Service was refused", c.Message)
	}
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svcName}, &corev1.Service{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Service %s while the policy refuses it: %v", svcName, err)
	}

	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the Service made once the policy is gone", func() (bool, error) {
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: svcName}, &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	waitServing(t, ns, "qwen", "the report gone", func(ms *v1.ModelServing) bool {
		c := meta.FindStatusCondition(ms.Status.Conditions, v1.ConditionDegraded)
		return ms.Status.ObservedGeneration == ms.Generation && (c == nil || c.Status != metav1.ConditionTrue)
	})
}
