// Package testenv starts a real control plane (kube-apiserver + etcd, built by
// hack/build-control-plane.sh) for envtest-based tests, with the ModelServing and
// LeaderWorkerSet CRDs installed. Start it once per test package, from TestMain.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	servingv1alpha1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
)

// Env is a running control plane.
type Env struct {
	Environment *envtest.Environment
	Config      *rest.Config
	Scheme      *runtime.Scheme
	Client      client.Client
}

// RepoRoot is the root of the kubectl-llm checkout.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Scheme knows the built-in types, ModelServing and LeaderWorkerSet.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(s))
	must(servingv1alpha1.AddToScheme(s))
	must(lwsv1.AddToScheme(s))
	return s
}

// Assets returns the directory holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS when set,
// else the output of hack/build-control-plane.sh (instant when its cache is warm).
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "hack", "build-control-plane.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the control plane with hack/build-control-plane.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CRDDirs are the ModelServing CRD directory and the committed copy of the LeaderWorkerSet CRD
// of the sigs.k8s.io/lws version in go.mod (config/crd/lws, refreshed and checked by
// `make generate` / `make verify-generated`). Reading the committed copy, not the module cache,
// keeps the harness working on a machine whose module cache is empty.
func CRDDirs() ([]string, error) {
	dirs := []string{
		filepath.Join(RepoRoot(), "config", "crd", "bases"),
		filepath.Join(RepoRoot(), "config", "crd", "lws", "leaderworkerset.x-k8s.io_leaderworkersets.yaml"),
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("the CRDs the tests install: %w (run 'make generate')", err)
		}
	}
	return dirs, nil
}

// Start starts kube-apiserver and etcd and installs the CRDs. Stop it with Env.Stop.
func Start() (*Env, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	dirs, err := CRDDirs()
	if err != nil {
		return nil, err
	}
	s := Scheme()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop() // a failed CRD install leaves kube-apiserver and etcd running otherwise
		return nil, fmt.Errorf("start envtest with the binaries in %s: %w", assets, err)
	}
	// Tests create many objects quickly; the default client limits would only slow them.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Environment: env, Config: cfg, Scheme: s, Client: c}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.Environment.Stop() }

// GVR of ModelServing, for dynamic clients.
var ModelServingGVR = schema.GroupVersionResource{Group: servingv1alpha1.GroupVersion.Group, Version: servingv1alpha1.GroupVersion.Version, Resource: "modelservings"}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
