package operator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Kube is the built-in API groups the operator calls with client-go's typed clients: the webhook
// configurations, its own user (SelfSubjectReview), the leader Lease and namespaces. Everything
// else goes through controller-runtime's client. *kubernetes.Clientset satisfies it (the tests
// use one), but the binary makes its clients with NewKube: the whole clientset (and client-go's
// informer factory) would link a typed client, informer and lister of every built-in API, 17 MiB
// of the binary (76 → 59 MB), most of it resident in the operator's memory as the binary's pages.
type Kube interface {
	AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface
	AuthenticationV1() authenticationv1.AuthenticationV1Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
	CoreV1() corev1.CoreV1Interface
}

// kube is Kube over one HTTP client shared by its groups, as a clientset shares it.
type kube struct {
	admissionregistration *admissionregistrationv1.AdmissionregistrationV1Client
	authentication        *authenticationv1.AuthenticationV1Client
	coordination          *coordinationv1.CoordinationV1Client
	core                  *corev1.CoreV1Client
}

// NewKube makes the typed clients of Kube for cfg.
func NewKube(cfg *rest.Config) (Kube, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	// One client-side rate limiter for every group, as a clientset has.
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	cfg = &c
	var k kube
	if k.admissionregistration, err = admissionregistrationv1.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	if k.authentication, err = authenticationv1.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	if k.coordination, err = coordinationv1.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	if k.core, err = corev1.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, err
	}
	return &k, nil
}

func (k *kube) AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface {
	return k.admissionregistration
}
func (k *kube) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return k.authentication
}
func (k *kube) CoordinationV1() coordinationv1.CoordinationV1Interface { return k.coordination }
func (k *kube) CoreV1() corev1.CoreV1Interface                         { return k.core }
