package cli

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestAPIServerOnThisMachine(t *testing.T) {
	local := []net.IP{net.ParseIP("10.1.2.3"), net.ParseIP("fd00::7")}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"https://127.0.0.1:6443", true},
		{"https://127.0.0.9:6443", true},
		{"https://localhost:32766", true},
		{"https://[::1]:6443", true},
		{"https://10.1.2.3:6443", true},
		{"https://[fd00::7]:443", true},
		{"10.1.2.3:6443", true},
		{"https://10.1.2.4:6443", false},
		{"https://api.example.com:6443", false}, // names are not resolved: remote
		{"https://kubernetes.default.svc", false},
		{"https://[fd00::8]:443", false},
	} {
		if got := apiServerOnThisMachine(tc.host, local); got != tc.want {
			t.Errorf("apiServerOnThisMachine(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestLeaseHeld(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration, seconds int32) *coordinationv1.Lease {
		l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds}}
		if renewedAgo >= 0 {
			l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewedAgo)}
		}
		return l
	}
	for _, tc := range []struct {
		name string
		l    *coordinationv1.Lease
		held bool
	}{
		{"renewed 3 s ago, 15 s lease", lease("pod-a_1", 3*time.Second, 15), true},
		{"renewed 16 s ago, 15 s lease: ran out (a killed holder)", lease("pod-a_1", 16*time.Second, 15), false},
		{"released: no holder", lease("", time.Second, 1), false},
		{"never renewed", lease("pod-a_1", -1, 15), false},
		{"no holder field", &coordinationv1.Lease{}, false},
	} {
		if _, _, held := leaseHeld(tc.l, now); held != tc.held {
			t.Errorf("%s: held %v, want %v", tc.name, held, tc.held)
		}
	}
}

// A laptop operator with leader election, whose Lease namespace does not exist (nothing
// installed), says so and what to do instead of retrying the Lease for ever; with the namespace
// there, or without election, it starts.
func TestALeaseNamespaceThatDoesNotExistIsSaid(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	o := newOperatorOptions(nil)
	err := o.checkLeaseIn(ctx, fake.NewClientset(), "kubectl-llm-system", now)
	if err == nil || !strings.Contains(err.Error(), "namespace kubectl-llm-system of the leader election Lease does not exist") ||
		!strings.Contains(err.Error(), "--leader-election-namespace") {
		t.Fatalf("no namespace: %v, want it named with what to do", err)
	}
	withNS := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-llm-system"}})
	if err := o.checkLeaseIn(ctx, withNS, "kubectl-llm-system", now); err != nil {
		t.Fatalf("the namespace exists, no Lease yet: %v", err)
	}
	o.Manager.LeaderElect = false
	if err := o.checkLeaseIn(ctx, fake.NewClientset(), "kubectl-llm-system", now); err != nil {
		t.Fatalf("without election no Lease is needed: %v", err)
	}
}

// Outside the cluster the metrics and probe endpoints listen on loopback unless a flag says
// otherwise; in a pod on every interface, for the kubelet's probes.
func TestTheEndpointsListenOnLoopbackOutsideTheCluster(t *testing.T) {
	kubeconfig := loopbackKubeconfig(t)
	run := func(args ...string) *OperatorOptions {
		t.Helper()
		root := NewRootOptions(genericiooptions.NewTestIOStreamsDiscard())
		root.ConfigFlags.KubeConfig = &kubeconfig
		cmd := newOperatorCommand(root)
		var got *OperatorOptions
		cmd.RunE = func(*cobra.Command, []string) error { return nil } // flags parsed only
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		// newOperatorCommand's options are reached through its flags: read them back.
		got = newOperatorOptions(root)
		got.Manager.MetricsAddr, _ = cmd.Flags().GetString("metrics-bind-address")
		got.Manager.ProbeAddr, _ = cmd.Flags().GetString("health-probe-bind-address")
		if err := got.Complete(cmd); err != nil {
			t.Fatal(err)
		}
		return got
	}
	o := run()
	if o.Manager.MetricsAddr != "127.0.0.1:8080" || o.Manager.ProbeAddr != "127.0.0.1:8081" {
		t.Errorf("outside the cluster: metrics %q, probes %q, want both on 127.0.0.1", o.Manager.MetricsAddr, o.Manager.ProbeAddr)
	}
	o = run("--metrics-bind-address=:9090", "--health-probe-bind-address=0")
	if o.Manager.MetricsAddr != ":9090" || o.Manager.ProbeAddr != "0" {
		t.Errorf("flags given: metrics %q, probes %q, want them as given", o.Manager.MetricsAddr, o.Manager.ProbeAddr)
	}
	if got := localUnlessInCluster(":8080", true); got != ":8080" {
		t.Errorf("in the cluster: %q, want every interface", got)
	}
}

// The operator's requests opt out of gzip unless --disable-compression says otherwise, given on
// the command line as a kubectl user gives it (a flag of the root command).
func TestTheOperatorAsksForUncompressedResponsesUnlessToldOtherwise(t *testing.T) {
	kubeconfig := loopbackKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--disable-compression=false"}, false},
		{[]string{"--disable-compression"}, true},
		{[]string{"--disable-compression=true"}, true},
	} {
		root := NewRootOptions(genericiooptions.NewTestIOStreamsDiscard())
		op, _, err := NewRootCommandWith(root).Find([]string{"operator"})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.ParseFlags(append([]string{"--kubeconfig", kubeconfig}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		o := newOperatorOptions(root)
		if err := o.Complete(op); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.config.DisableCompression != tc.want {
			t.Errorf("operator %v: DisableCompression %v, want %v", tc.args, o.config.DisableCompression, tc.want)
		}
	}
}

// loopbackKubeconfig writes a kubeconfig of an API server at 127.0.0.1:6443 (nothing need listen
// there: the options are only completed) and returns its path.
func loopbackKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}
