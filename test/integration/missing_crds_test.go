package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubectl-llm/kubectl-llm/pkg/operator"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// The operator refuses to start on a cluster without its CRDs, and says what to install.
func TestTheOperatorSaysWhichCRDIsMissing(t *testing.T) {
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	bare := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := bare.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bare.Stop() }()
	ctx := context.Background()

	err = operator.WaitForAPIs(ctx, cfg, time.Second)
	if err == nil || !strings.Contains(err.Error(), "the ModelServing CRD (modelservings.serving.kubectl-llm.dev) is not installed: run kubectl llm install") {
		t.Fatalf("no CRDs: got %v, want the ModelServing CRD named with what to run", err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "serving.kubectl-llm.dev_modelservings.yaml")},
	}); err != nil {
		t.Fatal(err)
	}
	opts := operator.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr, opts.LeaderElect = "0", "0", false
	_, err = operator.NewManager(ctx, cfg, opts)
	if err == nil || !strings.Contains(err.Error(), "the LeaderWorkerSet CRD is not installed") || !strings.Contains(err.Error(), "--lws=embedded") {
		t.Fatalf("no LWS CRD: got %v, want the LeaderWorkerSet CRD named with what to run", err)
	}
}
