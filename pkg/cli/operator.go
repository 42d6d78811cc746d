package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubectl-llm/kubectl-llm/pkg/failpoint"
	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/pkg/scheme"
)

// OperatorOptions run the reconcilers, in-cluster or against the current kubeconfig.
type OperatorOptions struct {
	*RootOptions
	Manager operator.Options
	Log     zap.Options
	// QPS and Burst bound the operator's requests to the API server (client-go's default of 5
	// per second would make a few hundred servings queue for minutes).
	QPS   float32
	Burst int

	config    *rest.Config
	inCluster bool
}

// newOperatorOptions are the command's options before its flags: the operator's defaults.
func newOperatorOptions(root *RootOptions) *OperatorOptions {
	return &OperatorOptions{RootOptions: root, Manager: operator.DefaultOptions(), Log: zap.Options{Development: false}, QPS: 100, Burst: 200}
}

func newOperatorCommand(root *RootOptions) *cobra.Command {
	o := newOperatorOptions(root)
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the ModelServing reconcilers (in-cluster, or against the current kubeconfig)",
		Long: `Run the ModelServing operator: the same reconcilers that run in-cluster after
"kubectl llm install", here against the cluster of the current kubeconfig (or the pod's service
account when run in a pod).

With --lws=embedded (or auto, when no LWS controller is installed) it also hosts the upstream
LeaderWorkerSet reconcilers and webhooks. Outside the cluster the webhooks listen on 127.0.0.1 and
the API server must reach that address (true for the simulated cluster).

The operator asks the API server for uncompressed responses and watch events, as
kube-controller-manager and kube-scheduler do: it runs beside the API server, where gzip costs
both ends CPU for every event and saves no time. --disable-compression=false asks for gzip (an
operator far from its API server, on a slow link).`,
		Example: `  # against the current context, hosting LWS when the cluster has none
  kubectl llm operator --leader-elect=false

  # against the simulated cluster
  kubectl llm operator --kubeconfig .sim/kubeconfig --lws=embedded --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(cmd); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	m := &o.Manager
	f.StringVar(&m.MetricsAddr, "metrics-bind-address", "", `Address of the metrics endpoint ("0" turns it off; default: `+operator.DefaultMetricsAddr+` in the cluster, 127.0.0.1`+operator.DefaultMetricsAddr+` outside)`)
	f.StringVar(&m.ProbeAddr, "health-probe-bind-address", "", `Address of /healthz and /readyz ("0" turns them off; default: `+operator.DefaultProbeAddr+` in the cluster, 127.0.0.1`+operator.DefaultProbeAddr+` outside)`)
	f.StringVar(&m.PprofAddr, "pprof-bind-address", "0", `Address of net/http/pprof, to profile the operator ("0" turns it off)`)
	f.BoolVar(&m.LeaderElect, "leader-elect", m.LeaderElect, "Elect a leader on a Lease so only one operator acts")
	f.StringVar(&m.LeaderElectionID, "leader-election-id", m.LeaderElectionID, "Name of the leader election Lease")
	f.StringVar(&m.LeaderElectionNamespace, "leader-election-namespace", m.LeaderElectionNamespace, "Namespace of the Lease (default: the pod's namespace in-cluster, kubectl-llm-system outside, as the install's operator)")
	f.DurationVar(&m.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long followers wait after the leader's last renewal before taking over")
	f.DurationVar(&m.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader retries renewing its Lease before it steps down and exits")
	f.DurationVar(&m.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease")
	f.StringVar(&m.Namespace, "watch-namespace", m.Namespace, "Only reconcile servings in this namespace (default: all)")
	f.IntVar(&m.HistoryLimit, "revision-history-limit", m.HistoryLimit, "ControllerRevisions kept per serving")
	f.StringVar(&m.LWS, "lws", m.LWS, "LeaderWorkerSet hosting: external (installed in the cluster), embedded (hosted here), auto (embedded when none is installed)")
	f.IntVar(&m.ServingWorkers, "concurrent-serving-syncs", m.ServingWorkers, "Servings reconciled at once")
	f.IntVar(&m.LWSWorkers, "concurrent-lws-syncs", m.LWSWorkers, "LeaderWorkerSets the embedded LWS reconciles at once")
	f.IntVar(&m.ServiceCreators, "concurrent-service-creates", m.ServiceCreators, "New Services of servings created at once (the API server gives ClusterIPs one at a time)")
	f.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "Requests per second to the API server")
	f.IntVar(&o.Burst, "kube-api-burst", o.Burst, "Burst of requests to the API server")
	f.IntVar(&m.Webhook.Port, "webhook-port", m.Webhook.Port, "Port of the embedded LWS webhooks")
	f.StringVar(&m.Webhook.BindHost, "webhook-bind-address", "", "Address the embedded LWS webhooks listen on (default: 127.0.0.1 outside the cluster, all inside)")
	f.StringVar(&m.Webhook.URLHost, "webhook-url-host", "", "Host the API server calls the webhooks at (default: 127.0.0.1 outside the cluster; the Service inside)")
	f.StringVar(&m.Webhook.ServiceName, "webhook-service", m.Webhook.ServiceName, "Service in front of the webhooks (in-cluster)")
	f.StringVar(&m.Webhook.ServiceNamespace, "webhook-service-namespace", m.Webhook.ServiceNamespace, "Namespace of that Service")
	f.StringVar(&m.Webhook.CertDir, "webhook-cert-dir", "", "Directory with tls.crt, tls.key and ca.crt; generated when they are missing, expired or for other names")
	f.StringVar(&m.Webhook.CertSecret, "webhook-cert-secret", "", "Secret (in --webhook-service-namespace) holding the installation's one webhook CA and certificate, made and rotated by the operator and shared by every replica (the embedded install sets it)")
	gofs := flag.NewFlagSet("log", flag.ContinueOnError)
	o.Log.BindFlags(gofs)
	f.AddGoFlagSet(gofs)
	return cmd
}

// Complete resolves the REST config and the defaults that depend on where the operator runs;
// cmd is the command whose flags were parsed.
func (o *OperatorOptions) Complete(cmd *cobra.Command) error {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("no cluster to run against: %w (set --kubeconfig or KUBECONFIG, or run in a pod)", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	cfg.DisableCompression = operatorDisablesCompression(cmd.Flags().Changed("disable-compression"), cfg.DisableCompression)
	o.config = cfg
	// Inert unless the fault suite names a point to stop at.
	o.Manager.Failpoints = failpoint.Parse(os.Getenv(failpoint.EnvVar), os.Exit, os.Stderr)
	_, hasSA := os.LookupEnv("KUBERNETES_SERVICE_HOST")
	o.inCluster = hasSA && (o.ConfigFlags.KubeConfig == nil || *o.ConfigFlags.KubeConfig == "")
	// In the cluster the kubelet probes the pod's IP; outside, the endpoints stay on this machine
	// (a laptop's metrics are nobody else's, and its ports are often taken on other addresses).
	o.Manager.MetricsAddr = cmp.Or(o.Manager.MetricsAddr, localUnlessInCluster(operator.DefaultMetricsAddr, o.inCluster))
	o.Manager.ProbeAddr = cmp.Or(o.Manager.ProbeAddr, localUnlessInCluster(operator.DefaultProbeAddr, o.inCluster))
	if !o.inCluster {
		if o.Manager.Webhook.URLHost == "" {
			if o.Manager.LWS != operator.LWSExternal && !apiServerOnThisMachine(cfg.Host, localAddresses()) {
				return fmt.Errorf("the API server at %s is not on this machine, so it cannot call the embedded LWS "+
					"webhooks at 127.0.0.1: run the operator in the cluster (kubectl llm install --lws=embedded), use "+
					"--lws=external where LWS is installed, or pass --webhook-url-host with an address the API server "+
					"reaches", cfg.Host)
			}
			o.Manager.Webhook.URLHost = "127.0.0.1"
		}
		if o.Manager.Webhook.BindHost == "" {
			o.Manager.Webhook.BindHost = "127.0.0.1"
		}
		if o.Manager.LeaderElectionNamespace == "" {
			// The install's namespace, where the in-cluster operator elects its leader: an operator
			// started from a laptop competes for the same Lease instead of acting beside it.
			o.Manager.LeaderElectionNamespace = operator.InstallNamespace
		}
	}
	return nil
}

// operatorDisablesCompression is whether the operator's requests opt out of gzip: yes unless
// --disable-compression was given (then as given). The operator watches every serving, group and
// pod of the cluster from beside its API server: compressing each watch event costs the API
// server CPU, and decompressing it the operator's (it was 6 % of the operator's CPU while
// servings were deleted, docs/performance.md), for bytes that cross a loopback or a pod network.
func operatorDisablesCompression(flagGiven, flagValue bool) bool {
	if flagGiven {
		return flagValue
	}
	return true
}

// localUnlessInCluster is the address addr (":port") on every interface in the cluster and on
// loopback outside it.
func localUnlessInCluster(addr string, inCluster bool) string {
	if inCluster {
		return addr
	}
	return "127.0.0.1" + addr
}

// apiServerOnThisMachine reports whether the API server at host (a URL or host[:port]) runs on
// this machine: a loopback address, localhost, or one of local. Other names are not resolved
// (no DNS lookup) and count as remote.
func apiServerOnThisMachine(host string, local []net.IP) bool {
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	for _, l := range local {
		if l.Equal(ip) {
			return true
		}
	}
	return false
}

// localAddresses are the IP addresses of this machine's interfaces.
func localAddresses() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP)
		}
	}
	return out
}

// Validate checks the flags.
func (o *OperatorOptions) Validate() error {
	switch o.Manager.LWS {
	case operator.LWSExternal, operator.LWSEmbedded, operator.LWSAuto:
	default:
		return fmt.Errorf("--lws must be external, embedded or auto, not %q", o.Manager.LWS)
	}
	if o.Manager.ServingWorkers < 1 || o.Manager.LWSWorkers < 1 {
		return fmt.Errorf("--concurrent-serving-syncs and --concurrent-lws-syncs must be at least 1, not %d and %d", o.Manager.ServingWorkers, o.Manager.LWSWorkers)
	}
	if o.Manager.ServiceCreators < 1 {
		return fmt.Errorf("--concurrent-service-creates must be at least 1, not %d", o.Manager.ServiceCreators)
	}
	if o.QPS <= 0 || o.Burst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, not %v and %d", o.QPS, o.Burst)
	}
	if o.Manager.HistoryLimit < 1 {
		return fmt.Errorf("--revision-history-limit must be at least 1, not %d", o.Manager.HistoryLimit)
	}
	// Each names the flag to change: a leader retries its renewal every retry period until the
	// renew deadline, and must have stepped down before a follower may take over.
	switch m := o.Manager; {
	case m.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period must be a positive duration such as 2s, not %s", m.RetryPeriod)
	case m.RenewDeadline <= m.RetryPeriod:
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than --leader-elect-retry-period (%s): the leader retries renewing its Lease every retry period until the deadline",
			m.RenewDeadline, m.RetryPeriod)
	case m.LeaseDuration <= m.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s): a leader that cannot renew must step down before another replica may take over",
			m.LeaseDuration, m.RenewDeadline)
	}
	if p := o.Manager.Webhook.Port; p < 1 || p > 65535 {
		return fmt.Errorf("--webhook-port must be between 1 and 65535, not %d", p)
	}
	return nil
}

// Run runs the manager until SIGINT or SIGTERM.
func (o *OperatorOptions) Run(ctx context.Context) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.Log), zap.WriteTo(o.Streams.ErrOut)))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.requireAPIs(ctx); err != nil {
		return err
	}
	if err := o.checkLease(ctx, time.Now()); err != nil {
		return err
	}
	return operator.Run(ctx, o.config, o.Manager)
}

// checkLease looks at the election Lease before the manager starts. Another operator holding it
// (say the in-cluster one, when this one runs from a laptop) is said at once: with leader
// election this one stands by until that one stops; without, it would act beside the leader (two
// writers of the same servings and webhook configurations), so it refuses to start. A Lease that
// cannot be read, is free or ran out does not stop it.
func (o *OperatorOptions) checkLease(ctx context.Context, now time.Time) error {
	ns := o.Manager.LeaderElectionNamespace
	if ns == "" {
		ns = podNamespace() // where controller-runtime puts the Lease in the cluster
	}
	if ns == "" {
		return nil
	}
	cs, err := operator.NewKube(o.config)
	if err != nil {
		return nil
	}
	return o.checkLeaseIn(ctx, cs, ns, now)
}

// checkLeaseIn is checkLease against cs, for the Lease in namespace ns.
func (o *OperatorOptions) checkLeaseIn(ctx context.Context, cs operator.Kube, ns string, now time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, o.Manager.LeaderElectionID, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && o.Manager.LeaderElect {
		// No Lease yet: the election will make it, unless its namespace does not exist, where
		// it would retry for ever without a word of why.
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("the namespace %s of the leader election Lease does not exist: run kubectl llm install (which makes it), "+
				"pass --leader-election-namespace with a namespace that exists, or --leader-elect=false to run without election", ns)
		}
		return nil
	}
	if err != nil {
		return nil
	}
	holder, renewed, held := leaseHeld(lease, now)
	if !held {
		return nil
	}
	key := ns + "/" + o.Manager.LeaderElectionID
	if !o.Manager.LeaderElect {
		return fmt.Errorf("another operator holds the Lease %s (%s, renewed %s ago): with --leader-elect=false this one would act beside it. "+
			"Stop that operator (kubectl -n %s scale deployment kubectl-llm-operator --replicas=0 for the installed one), "+
			"or run this one with --leader-elect=true, the default, to stand by until it stops", key, holder, renewed.Round(time.Second), ns)
	}
	ctrl.Log.WithName("setup").Info("Another operator holds the Lease: this one serves webhooks but acts only once that one stops or loses the Lease",
		"lease", key, "holder", holder, "renewed", renewed.Round(time.Second).String()+" ago")
	return nil
}

// leaseHeld reports who holds the Lease and how long ago they renewed it, when someone holds it
// and it has not run out at now.
func leaseHeld(l *coordinationv1.Lease, now time.Time) (holder string, renewed time.Duration, held bool) {
	holder = ptr.Deref(l.Spec.HolderIdentity, "")
	if holder == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return holder, 0, false
	}
	renewed = now.Sub(l.Spec.RenewTime.Time)
	return holder, renewed, renewed < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
}

// podNamespace is the namespace of the pod the operator runs in ("" outside a pod).
func podNamespace() string {
	raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}

// requireAPIs refuses to start where the ModelServing or the LeaderWorkerSet API is not served:
// the reconcilers could only fail to watch them. It is the check of preflight and version
// (crdCheck), which answers through discovery where the operator may not read CRDs. When it
// cannot tell (the cluster does not answer yet), the manager's own start decides.
func (o *OperatorOptions) requireAPIs(ctx context.Context) error {
	c, err := client.New(o.config, client.Options{Scheme: scheme.Shared()})
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, api := range []struct{ what, crd, fix string }{
		{"ModelServing API", servingCRDName, "run kubectl llm install"},
		{"LeaderWorkerSet API", lwsCRDName, "install LeaderWorkerSet, or kubectl llm install --lws=embedded, which ships its CRD"},
	} {
		if ch := crdCheck(ctx, c, api.what, api.crd); ch.Result == "FAIL" {
			return fmt.Errorf("the %s is not served by the cluster at %s (%s): %s", api.what, o.config.Host, ch.Detail, api.fix)
		}
	}
	return nil
}
