package operator

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"
	"github.com/kubectl-llm/kubectl-llm/pkg/naming"
)

// Ports and settings of disaggregated serving (spec.roles).
const (
	// NixlSideChannelPort is where vLLM's NixlConnector listens for the handshake of a peer
	// (VLLM_NIXL_SIDE_CHANNEL_PORT; 5600 is vLLM's default, set so the port is declared).
	NixlSideChannelPort = 5600
	// SGLangBootstrapPort is the bootstrap server of an SGLang prefill server, which decode
	// servers and the router reach (--disaggregation-bootstrap-port; 8998 is SGLang's default).
	SGLangBootstrapPort = 8998
	// KVTransferBackend is the transfer engine both engines use by default here: NIXL (vLLM's
	// NixlConnector, SGLang's nixl backend), which needs no RDMA device name to start. A role's
	// args can pick another (the engines keep the last of a repeated flag).
	KVTransferBackend = "nixl"
)

// DisaggregationArgs are the engine flags that make a pod prefill or decode:
//   - vLLM (docs/features/nixl_connector_usage.md): --kv-transfer-config with NixlConnector and
//     kv_role kv_producer for prefill, kv_consumer for decode;
//   - SGLang (docs/advanced_features/pd_disaggregation.md): --disaggregation-mode prefill|decode
//     with --disaggregation-transfer-backend nixl, and the prefill's bootstrap port.
//
// A custom engine gets none: its args are all the user's.
func DisaggregationArgs(engine v1.EngineType, role v1.RoleName) []string {
	switch engine {
	case v1.EngineCustom:
		return nil
	case v1.EngineSGLang:
		args := []string{"--disaggregation-mode", string(role), "--disaggregation-transfer-backend", KVTransferBackend}
		if role == v1.RolePrefill {
			args = append(args, "--disaggregation-bootstrap-port", fmt.Sprint(SGLangBootstrapPort))
		}
		return args
	default: // vLLM
		kvRole := "kv_consumer"
		if role == v1.RolePrefill {
			kvRole = "kv_producer"
		}
		return []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"` + kvRole + `"}`}
	}
}

// DisaggregationEnv is the environment the engine of a role needs besides its flags. vLLM's
// NixlConnector advertises VLLM_NIXL_SIDE_CHANNEL_HOST to its peers (default localhost, which
// only works on one host): every pod advertises its own IP.
func DisaggregationEnv(engine v1.EngineType) []corev1.EnvVar {
	if engine == v1.EngineSGLang || engine == v1.EngineCustom {
		return nil
	}
	return []corev1.EnvVar{
		{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "VLLM_NIXL_SIDE_CHANNEL_PORT", Value: fmt.Sprint(NixlSideChannelPort)},
	}
}

// DisaggregationPorts are the ports a role's leader serves besides HTTP, for its peers and the
// router: the NIXL handshake (vLLM) or the prefill's bootstrap server (SGLang).
func DisaggregationPorts(engine v1.EngineType, role v1.RoleName) []corev1.ContainerPort {
	switch engine {
	case v1.EngineCustom:
		return nil
	case v1.EngineSGLang:
		if role != v1.RolePrefill {
			return nil
		}
		return []corev1.ContainerPort{{Name: "bootstrap", ContainerPort: SGLangBootstrapPort, Protocol: corev1.ProtocolTCP}}
	default: // vLLM
		return []corev1.ContainerPort{{Name: "nixl", ContainerPort: NixlSideChannelPort, Protocol: corev1.ProtocolTCP}}
	}
}

// RoleServingSpec is the single-role spec a role's pods are built from (v1.ModelServingSpec.ForRole)
// with the role's engine flags and environment in place: the generated flags come before
// spec.engine.args and the role's args, so that either can override them.
func RoleServingSpec(spec v1.ModelServingSpec, role v1.RoleName) (v1.ModelServingSpec, error) {
	eff, ok := spec.ForRole(role)
	if !ok {
		return v1.ModelServingSpec{}, field.NotFound(field.NewPath("spec", "roles").Key(string(role)), role)
	}
	eff.Engine.Args = append(DisaggregationArgs(eff.Engine.Type, role), eff.Engine.Args...)
	eff.Engine.Env = append(DisaggregationEnv(eff.Engine.Type), eff.Engine.Env...)
	return eff, nil
}

// RoleEngineCommand is the engine command line of a leader or worker of a role.
func RoleEngineCommand(spec v1.ModelServingSpec, role v1.RoleName, member Role) (command, args []string, err error) {
	eff, err := RoleServingSpec(spec, role)
	if err != nil {
		return nil, nil, err
	}
	command, args = EngineCommand(eff, member)
	return command, args, nil
}

// RolePodTemplate is the pod template of a leader or worker of a role: the serving's pod
// template built from the role's spec (RoleServingSpec), spec.template merged last as for any serving,
// then the role's labels and its leader's ports, which the template cannot take away.
func RolePodTemplate(in TemplateInput, role v1.RoleName, member Role) (corev1.PodTemplateSpec, error) {
	eff, err := RoleServingSpec(in.Spec, role)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	in.Spec = eff
	// The role's pods are created for the serving's restart id and the role's (a new id of the
	// role restarts the role alone).
	in.RestartID = ""
	if eff.Restart != nil {
		in.RestartID = eff.Restart.ID
	}
	pod, err := PodTemplate(in, member)
	if err != nil {
		return pod, err
	}
	for k, v := range naming.RolePodLabels(role, in.Revision) {
		pod.Labels[k] = v
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name != naming.EngineContainer || member != Leader {
			continue
		}
		for _, p := range DisaggregationPorts(eff.Engine.Type, role) {
			if !slices.ContainsFunc(c.Ports, func(q corev1.ContainerPort) bool { return q.Name == p.Name || q.ContainerPort == p.ContainerPort }) {
				c.Ports = append(c.Ports, p)
			}
		}
	}
	return pod, nil
}
