package naming

import v1 "github.com/kubectl-llm/kubectl-llm/api/v1alpha1"

// Default engine images, used when spec.engine.image is empty.
const (
	DefaultVLLMImage   = "vllm/vllm-openai:v0.11.0"
	DefaultSGLangImage = "lmsysorg/sglang:v0.5.4"
)

// EngineContainer is the name of the engine container (the name a template overlay merges on).
const EngineContainer = "engine"

// EngineImage is the image the engine container runs.
func EngineImage(e v1.EngineSpec) string {
	if e.Image != "" {
		return e.Image
	}
	if e.Type == v1.EngineSGLang {
		return DefaultSGLangImage
	}
	return DefaultVLLMImage
}
