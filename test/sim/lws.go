package sim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// UpstreamLWS is the upstream LeaderWorkerSet manager (sigs.k8s.io/lws/cmd, built by
// hack/build-lws-manager.sh) running beside a simulated cluster with its controllers and
// webhooks, the webhooks called by URL on 127.0.0.1 with a CA made here: LWS alone, the baseline
// of the side-by-side measurements, and the LWS of `kubectl llm operator --lws=external`.
type UpstreamLWS struct {
	// Pid is the manager's process id (for CPU and RSS readings).
	Pid int
	// Log is the manager's log file.
	Log string
	// Kubeconfig is the manager's kubeconfig: it acts as UpstreamLWSServiceAccount.
	Kubeconfig string

	metricsPort int
	cmd         *exec.Cmd
	exited      chan struct{}
	c           *Cluster
	webhooks    []client.Object
}

// Names of the webhook configurations StartUpstreamLWS applies.
const (
	UpstreamLWSMutating   = "lws-mutating-webhook-configuration"
	UpstreamLWSValidating = "lws-validating-webhook-configuration"
)

// StartUpstreamLWS installs the LeaderWorkerSet and DisaggregatedSet CRDs of the sigs.k8s.io/lws
// module and runs its manager until Stop, on webhookPort and probePort of 127.0.0.1. It returns
// once the manager is ready and the API server's calls reach its webhooks.
func (c *Cluster) StartUpstreamLWS(ctx context.Context, webhookPort, probePort int) (*UpstreamLWS, error) {
	bin, err := c.output(ctx, "bash", filepath.Join(RepoRoot(), "hack", "build-lws-manager.sh"))
	if err != nil {
		return nil, err
	}
	moddir, err := c.output(ctx, "bash", filepath.Join(RepoRoot(), "hack", "moddir.sh"), "sigs.k8s.io/lws")
	if err != nil {
		return nil, err
	}
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"leaderworkerset.x-k8s.io_leaderworkersets.yaml", "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"} {
		objs, err := decodeFile(filepath.Join(moddir, "config", "crd", "bases", f))
		if err != nil {
			return nil, err
		}
		if err := applyAll(ctx, cl, objs); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(c.Dir, "lws-upstream")
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig, err := c.upstreamLWSIdentity(ctx, cl, moddir, dir)
	if err != nil {
		return nil, err
	}
	metricsPort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	caPEM, err := writeServingCert(certDir)
	if err != nil {
		return nil, err
	}
	hooks, err := decodeFile(filepath.Join(moddir, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", webhookPort)
	for _, o := range hooks {
		switch h := o.(type) {
		case *admissionv1.MutatingWebhookConfiguration:
			h.Name = UpstreamLWSMutating
			for i := range h.Webhooks {
				h.Webhooks[i].ClientConfig = urlConfig(base, h.Webhooks[i].ClientConfig, caPEM)
			}
		case *admissionv1.ValidatingWebhookConfiguration:
			h.Name = UpstreamLWSValidating
			for i := range h.Webhooks {
				h.Webhooks[i].ClientConfig = urlConfig(base, h.Webhooks[i].ClientConfig, caPEM)
			}
		}
	}
	config := fmt.Sprintf(`apiVersion: config.lws.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: 127.0.0.1:%d
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: 500
  burst: 500
`, webhookPort, certDir, metricsPort, probePort)
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "--config", configPath)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	u := &UpstreamLWS{Pid: cmd.Process.Pid, Log: logPath, Kubeconfig: kubeconfig, metricsPort: metricsPort, cmd: cmd, exited: make(chan struct{}), c: c, webhooks: hooks}
	go func() { _ = cmd.Wait(); close(u.exited) }()
	if err := u.waitReady(ctx, probePort); err != nil {
		_ = u.Stop(context.Background())
		return nil, err
	}
	// The webhook configurations go in only once the manager serves them: failurePolicy is Fail.
	if err := applyAll(ctx, cl, hooks); err != nil {
		_ = u.Stop(context.Background())
		return nil, err
	}
	return u, nil
}

func (u *UpstreamLWS) waitReady(ctx context.Context, probePort int) error {
	deadline := time.Now().Add(60 * time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)
	for {
		select {
		case <-u.exited:
			return fmt.Errorf("the upstream LWS manager exited: %s", testenv.LastLinesOf(u.Log, 20))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(readFile(u.Log), "Starting workers") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the upstream LWS manager is not ready after 60s: %s", testenv.LastLinesOf(u.Log, 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop removes the webhook configurations (their calls would fail once the manager is gone) and
// stops the manager. The CRDs stay.
func (u *UpstreamLWS) Stop(ctx context.Context) error {
	var errs []error
	if cl, err := client.New(u.c.Config, client.Options{}); err == nil {
		for _, h := range u.webhooks {
			if err := cl.Delete(ctx, h); client.IgnoreNotFound(err) != nil {
				errs = append(errs, err)
			}
		}
	} else {
		errs = append(errs, err)
	}
	_ = u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.exited:
	case <-time.After(15 * time.Second):
		_ = u.cmd.Process.Kill()
		<-u.exited
	}
	return errors.Join(errs...)
}

func urlConfig(base string, cc admissionv1.WebhookClientConfig, ca []byte) admissionv1.WebhookClientConfig {
	path := ""
	if cc.Service != nil && cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	url := base + path
	return admissionv1.WebhookClientConfig{URL: &url, CABundle: ca}
}

// writeServingCert writes tls.crt and tls.key for 127.0.0.1 into dir, signed by a CA made for
// it, and returns the CA certificate (PEM) for the webhook configurations.
func writeServingCert(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lws-upstream-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if _, err := tls.X509KeyPair(crt, keyPEM); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// Metrics reads the manager's Prometheus metrics (served over TLS on 127.0.0.1, behind
// authentication and authorization) with a token of its own ServiceAccount.
func (u *UpstreamLWS) Metrics(ctx context.Context) (string, error) {
	cs, err := kubernetes.NewForConfig(u.c.Config)
	if err != nil {
		return "", err
	}
	ns, name, _ := strings.Cut(strings.TrimPrefix(UpstreamLWSServiceAccount, "system:serviceaccount:"), ":")
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token for %s: %w", UpstreamLWSServiceAccount, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", u.metricsPort), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
	// Its metrics certificate is one it made for itself, on loopback.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the upstream manager's metrics: %s: %s", resp.Status, body)
	}
	return string(body), nil
}

// UpstreamLWSServiceAccount is the identity the upstream manager runs as, as its own install
// makes it (config/default's namespace prefix and config/rbac's ServiceAccount): bound by its
// own ClusterRole, never the cluster's admin, as the operator runs as its own.
const UpstreamLWSServiceAccount = "system:serviceaccount:lws-system:lws-controller-manager"

// upstreamLWSIdentity binds the upstream manager's ClusterRole (config/rbac/role.yaml of the
// module) to UpstreamLWSServiceAccount and writes a kubeconfig in dir that acts as it (the
// cluster's admin impersonating it, as the operator's side does); it returns that kubeconfig.
func (c *Cluster) upstreamLWSIdentity(ctx context.Context, cl client.Client, moddir, dir string) (string, error) {
	objs, err := decodeFile(filepath.Join(moddir, "config", "rbac", "role.yaml"))
	if err != nil {
		return "", err
	}
	// Its metrics are served behind authentication and authorization (config/rbac's proxy-role,
	// for the reviews that takes, and metrics-reader): the manager may review tokens and read its
	// own metrics, with its own token (Metrics).
	for _, f := range []string{"auth_proxy_role.yaml", "auth_proxy_client_clusterrole.yaml"} {
		more, err := decodeFile(filepath.Join(moddir, "config", "rbac", f))
		if err != nil {
			return "", err
		}
		for _, o := range more {
			rules, _, _ := unstructured.NestedSlice(o.(*unstructured.Unstructured).Object, "rules")
			mine, _, _ := unstructured.NestedSlice(objs[0].(*unstructured.Unstructured).Object, "rules")
			if err := unstructured.SetNestedSlice(objs[0].(*unstructured.Unstructured).Object, append(mine, rules...), "rules"); err != nil {
				return "", err
			}
		}
	}
	const role = "lws-upstream-manager"
	for _, o := range objs {
		o.SetName(role)
	}
	ns, name, _ := strings.Cut(strings.TrimPrefix(UpstreamLWSServiceAccount, "system:serviceaccount:"), ":")
	account := []client.Object{
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name, "namespace": ns}}},
	}
	if err := applyAll(ctx, cl, account); err != nil {
		return "", err
	}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": role},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": name}},
	}}
	if err := applyAll(ctx, cl, append(objs, binding)); err != nil {
		return "", err
	}
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = UpstreamLWSServiceAccount
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// decodeFile reads the Kubernetes objects of a multi-document YAML file: webhook
// configurations typed (to be rewritten), anything else unstructured.
func decodeFile(path string) ([]client.Object, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		var typed client.Object
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			typed = &admissionv1.MutatingWebhookConfiguration{}
		case "ValidatingWebhookConfiguration":
			typed = &admissionv1.ValidatingWebhookConfiguration{}
		default:
			out = append(out, u)
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, typed)
	}
}

// applyAll server-side applies objects with the field manager kubectl-llm-sim.
func applyAll(ctx context.Context, cl client.Client, objs []client.Object) error {
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return err
			}
			gvk, err := cl.GroupVersionKindFor(o)
			if err != nil {
				return err
			}
			u = &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(gvk)
		}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("kubectl-llm-sim"), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

func (c *Cluster) output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
