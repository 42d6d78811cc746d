package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	lwsac "sigs.k8s.io/lws/client-go/applyconfiguration/leaderworkerset/v1"
	lwswebhooks "sigs.k8s.io/lws/pkg/webhooks"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// The operator's own writes of the LeaderWorkerSets it manages do not go through the embedded
// LWS webhooks: the operator runs the webhooks' own code on them before it writes (admitLWS),
// in its process, so the API server's two calls back to the same process (a TLS request each,
// the whole LeaderWorkerSet encoded and decoded both ways: 3 ms each on an idle simulated
// cluster, 40–50 ms each in a burst, when that process is busiest) are left out of every step
// in and every rollout's first step. Anyone else's LeaderWorkerSet, and a LeaderWorkerSet of
// ours written by anyone else (a hand edit), still goes through them.

// ownLWSWritesCondition is the match condition of the embedded LWS webhooks: a request is sent
// to them unless user (the operator) writes a LeaderWorkerSet labelled as ours. Every branch
// reads only what a create or an update carries, so the expression cannot fail (with the
// webhooks' failurePolicy Fail, an error would refuse the request).
func ownLWSWritesCondition(user string) *admissionac.MatchConditionApplyConfiguration {
	expr := fmt.Sprintf(`request.userInfo.username != %s || !has(object.metadata.labels) || `+
		`!(%s in object.metadata.labels) || object.metadata.labels[%s] != %s`,
		strconv.Quote(user), strconv.Quote(v1.LabelManagedBy), strconv.Quote(v1.LabelManagedBy), strconv.Quote(v1.ManagedByValue))
	return admissionac.MatchCondition().WithName("not-the-operators-own-leaderworkerset").WithExpression(expr)
}

// whoAmI is the user the API server authenticates the client as (a SelfSubjectReview, which
// every authenticated user may make).
func whoAmI(ctx context.Context, cs Kube) (string, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("ask the API server who the operator is (SelfSubjectReview): %w", err)
	}
	if r.Status.UserInfo.Username == "" {
		return "", fmt.Errorf("the API server's SelfSubjectReview named no user")
	}
	return r.Status.UserInfo.Username, nil
}

// admitLWS does for a LeaderWorkerSet the operator is about to write what the embedded LWS
// webhooks do for everyone else's, with their own code: LWS's defaulting must leave it as it is
// (the operator sets every field LWS defaults, whoever hosts LWS), and LWS's validation must
// accept it. A LeaderWorkerSet LWS would refuse is a spec the serving cannot have, reported as
// the serving's spec error; the API server never stores it.
//
// The rules LWS checks only on an update concern fields the operator never sets
// (spec.leaderWorkerTemplate.subGroupPolicy) or always sets (spec.networkConfig.subdomainPolicy),
// so the create's rules are the update's too.
func admitLWS(ctx context.Context, desired *lwsac.LeaderWorkerSetApplyConfiguration) error {
	raw, err := json.Marshal(desired)
	if err != nil {
		return err
	}
	lws := &lwsv1.LeaderWorkerSet{}
	if err := json.Unmarshal(raw, lws); err != nil {
		return err
	}
	if lws.Spec.Replicas == nil || lws.Spec.LeaderWorkerTemplate.Size == nil {
		return fmt.Errorf("the LeaderWorkerSet %s/%s built for the serving has no replicas or size", lws.Namespace, lws.Name)
	}
	hook := &lwswebhooks.LeaderWorkerSetWebhook{}
	defaulted := lws.DeepCopy()
	if err := hook.Default(ctx, defaulted); err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(lws, defaulted) {
		// Never: admitLWS's test builds every shape of serving. Writing it would store a
		// LeaderWorkerSet LWS's controller expects defaulted, so it is not written.
		return fmt.Errorf("the LeaderWorkerSet %s/%s built for the serving lacks a field LWS defaults "+
			"(a bug of the operator: please report it)", lws.Namespace, lws.Name)
	}
	if _, err := hook.ValidateCreate(ctx, lws); err != nil {
		return &specError{fmt.Errorf("the LeaderWorkerSet the spec makes is refused by LWS's validation "+
			"(from spec.replicas, spec.groupSize and spec.rollout): %w", err)}
	}
	return nil
}
