package cli

import (
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
	"k8s.io/client-go/rest"
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

func newOperatorCommand(root *RootOptions) *cobra.Command {
	o := &OperatorOptions{RootOptions: root, Manager: operator.DefaultOptions(), Log: zap.Options{Development: false}, QPS: 100, Burst: 200}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the ModelServing reconcilers (in-cluster, or against the current kubeconfig)",
		Long: `Run the ModelServing operator: the same reconcilers that run in-cluster after
"kubectl llm install", here against the cluster of the current kubeconfig (or the pod's service
account when run in a pod).

With --lws=embedded (or auto, when no LWS controller is installed) it also hosts the upstream
LeaderWorkerSet reconcilers and webhooks. Outside the cluster the webhooks listen on 127.0.0.1 and
the API server must reach that address (true for the simulated cluster).`,
		Example: `  # against the current context, hosting LWS when the cluster has none
  kubectl llm operator --leader-elect=false

  # against the simulated cluster
  kubectl llm operator --kubeconfig .sim/kubeconfig --lws=embedded --leader-elect=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
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
	f.StringVar(&m.MetricsAddr, "metrics-bind-address", m.MetricsAddr, `Address of the metrics endpoint ("0" turns it off)`)
	f.StringVar(&m.ProbeAddr, "health-probe-bind-address", m.ProbeAddr, `Address of /healthz and /readyz ("0" turns them off)`)
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

// Complete resolves the REST config and the defaults that depend on where the operator runs.
func (o *OperatorOptions) Complete() error {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("no cluster to run against: %w (set --kubeconfig or KUBECONFIG, or run in a pod)", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	o.config = cfg
	// Inert unless the fault suite names a point to stop at.
	o.Manager.Failpoints = failpoint.Parse(os.Getenv(failpoint.EnvVar), os.Exit, os.Stderr)
	_, hasSA := os.LookupEnv("KUBERNETES_SERVICE_HOST")
	o.inCluster = hasSA && (o.ConfigFlags.KubeConfig == nil || *o.ConfigFlags.KubeConfig == "")
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
	if o.QPS <= 0 || o.Burst < 1 {
		return fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive, not %v and %d", o.QPS, o.Burst)
	}
	if o.Manager.HistoryLimit < 1 {
		return fmt.Errorf("--revision-history-limit must be at least 1, not %d", o.Manager.HistoryLimit)
	}
	if m := o.Manager; m.RetryPeriod <= 0 || m.RenewDeadline <= m.RetryPeriod || m.LeaseDuration <= m.RenewDeadline {
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s), longer than --leader-elect-retry-period (%s), above 0",
			m.LeaseDuration, m.RenewDeadline, m.RetryPeriod)
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
	return operator.Run(ctx, o.config, o.Manager)
}

// requireAPIs refuses to start where the ModelServing or the LeaderWorkerSet API is not served:
// the reconcilers could only fail to watch them. It is the check of preflight and version
// (crdCheck), which answers through discovery where the operator may not read CRDs. When it
// cannot tell (the cluster does not answer yet), the manager's own start decides.
func (o *OperatorOptions) requireAPIs(ctx context.Context) error {
	c, err := client.New(o.config, client.Options{Scheme: scheme.New()})
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
