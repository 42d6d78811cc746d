package config_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-llm/kubectl-llm/config"
	"github.com/kubectl-llm/kubectl-llm/test/testenv"
)

// objects decodes a multi-document YAML file into unstructured objects.
func objects(t *testing.T, data []byte) []unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func find(t *testing.T, objs []unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s %s in the manifests", kind, name)
}

func read(t *testing.T, fsys interface{ ReadFile(string) ([]byte, error) }, name string) []byte {
	t.Helper()
	b, err := fsys.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTheInstallRendersAreTheKustomizeRenders(t *testing.T) {
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{"default", "embedded"} {
		cmd := exec.Command(filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(testenv.RepoRoot(), "config", variant))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl kustomize config/%s: %v: %s", variant, err, stderr.String())
		}
		if diff := cmp.Diff(string(out), string(read(t, config.Install, "install/"+variant+".yaml"))); diff != "" {
			t.Errorf("install/%s.yaml is stale; run make generate (-render +committed):\n%.2000s", variant, diff)
		}
	}
}

func TestTheInstalledRolesAreTheOnesTheMarkersDeclare(t *testing.T) {
	root := testenv.RepoRoot()
	for _, tc := range []struct{ variant, role, generated string }{
		{"default", "kubectl-llm-operator", "config/rbac/role.yaml"},
		{"embedded", "kubectl-llm-operator", "config/rbac/role.yaml"},
		{"embedded", "kubectl-llm-lws", "config/rbac/lws/role.yaml"},
	} {
		gen, err := os.ReadFile(filepath.Join(root, tc.generated))
		if err != nil {
			t.Fatal(err)
		}
		var want, got rbacv1.ClusterRole
		find(t, objects(t, gen), "ClusterRole", tc.role, &want)
		find(t, objects(t, read(t, config.Install, "install/"+tc.variant+".yaml")), "ClusterRole", tc.role, &got)
		if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
			t.Errorf("%s install: role %s differs from the markers (-markers +installed):\n%s", tc.variant, tc.role, diff)
		}
	}
	var def []unstructured.Unstructured = objects(t, read(t, config.Install, "install/default.yaml"))
	for _, o := range def {
		if o.GetName() == "kubectl-llm-lws" {
			t.Errorf("the default install (external LWS) must not grant the embedded LWS role (%s)", o.GetKind())
		}
	}
}

func TestTheOperatorDeploymentIsLockedDown(t *testing.T) {
	for _, variant := range []string{"default", "embedded"} {
		var d appsv1.Deployment
		objs := objects(t, read(t, config.Install, "install/"+variant+".yaml"))
		find(t, objs, "Deployment", "kubectl-llm-operator", &d)
		pod := d.Spec.Template.Spec
		c := pod.Containers[0]
		checks := map[string]bool{
			"runs as non-root":          pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot,
			"seccomp RuntimeDefault":    pod.SecurityContext != nil && pod.SecurityContext.SeccompProfile != nil && pod.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault,
			"read-only root filesystem": c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem,
			"no privilege escalation":   c.SecurityContext != nil && c.SecurityContext.AllowPrivilegeEscalation != nil && !*c.SecurityContext.AllowPrivilegeEscalation,
			"liveness and readiness":    c.LivenessProbe != nil && c.ReadinessProbe != nil,
			"resources":                 c.Resources.Requests.Cpu() != nil && !c.Resources.Limits.Memory().IsZero(),
			"leader election":           strings.Contains(strings.Join(c.Args, " "), "--leader-elect"),
			"metrics port":              strings.Contains(strings.Join(c.Args, " "), "--metrics-bind-address=:8080"),
			"the right LWS mode":        strings.Contains(strings.Join(c.Args, " "), map[string]string{"default": "--lws=external", "embedded": "--lws=embedded"}[variant]),
		}
		for what, ok := range checks {
			if !ok {
				t.Errorf("%s install: the operator Deployment lacks %s", variant, what)
			}
		}
		if variant == "embedded" {
			var svc corev1.Service
			find(t, objs, "Service", "kubectl-llm-webhook", &svc)
			var found bool
			for _, o := range objs {
				found = found || (o.GetKind() == "CustomResourceDefinition" && o.GetName() == "leaderworkersets.leaderworkerset.x-k8s.io")
			}
			if !found {
				t.Error("embedded install lacks the LeaderWorkerSet CRD")
			}
		}
	}
}
