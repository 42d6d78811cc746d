package testenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace creates a namespace with a generated name starting with prefix, so tests sharing a
// control plane never see each other's objects.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// SyncBuffer is a bytes.Buffer a test may read while a command or view writes to it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WriteKubeconfig writes a kubeconfig for the control plane to path (context "envtest",
// namespace "default"), so tests go through the same flags and loading as a user.
func (e *Env) WriteKubeconfig(path string) error { return WriteKubeconfig(path, e.Config) }

// WriteKubeconfig writes a kubeconfig for a server's rest config to path.
func WriteKubeconfig(path string, c *rest.Config) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*cfg, path)
}

// TempKubeconfig writes the control plane's kubeconfig into a new temporary directory; remove
// it with the returned function.
func (e *Env) TempKubeconfig(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", func() {}, err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, func() { _ = os.RemoveAll(dir) }, e.WriteKubeconfig(path)
}

// LastLines is the last n lines of s (a log, for a failure message).
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// LastLinesOf is the last n lines of the file at path; "" when it cannot be read.
func LastLinesOf(path string, n int) string {
	b, _ := os.ReadFile(path)
	return LastLines(string(b), n)
}
