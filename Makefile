# kubectl-llm — see README.md. `make demo` runs the demo, `make test` runs every test.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOFLAGS := -modcacherw

CONTROLLER_GEN := go tool controller-gen
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# Native fuzz targets run briefly by `make test` (their seeds, in testdata/fuzz, run with every go test).
FUZZ_TARGETS := FuzzBuildGroups FuzzSummarize
# A count, not a duration: with a duration Go's fuzz coordinator (go1.26) can fail a clean run with
# "context deadline exceeded" when the deadline races a busy worker (golang/go#75804, fixed in go1.27).
FUZZ_TIME ?= 5000x
FUZZ_FLAGS ?=

.PHONY: all build test test-realnode fuzz generate verify-generated fmt-check vet modcache-check control-plane clean-cache demo demo-pd demo-down release-check perf

all: build

build: ## Build bin/kubectl-llm.
	CGO_ENABLED=0 go build -trimpath -o bin/kubectl-llm ./cmd/kubectl-llm

generate: ## Regenerate deepcopy code and the CRD from the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) applyconfiguration:headerFile=hack/boilerplate.go.txt paths=./api/v1alpha1
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	@mkdir -p config/crd/lws
	@# The LeaderWorkerSet CRD of the sigs.k8s.io/lws version in go.mod, for embedded LWS hosting.
	@lws=$$(bash hack/moddir.sh sigs.k8s.io/lws); \
	  cp "$$lws/config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml" config/crd/lws/
	@chmod u+w config/crd/lws/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=kubectl-llm-operator paths=./pkg/operator output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=kubectl-llm-lws paths=./pkg/operator/lwsrbac output:rbac:artifacts:config=config/rbac/lws
	@# What `kubectl llm install` applies: the kustomize renders, committed so the binary can embed them.
	@kubectl=$$(bash hack/build-control-plane.sh)/kubectl; \
	  $$kubectl kustomize config/default >config/install/default.yaml; \
	  $$kubectl kustomize config/embedded >config/install/embedded.yaml

verify-generated: generate ## Fail when generated files differ from what is committed.
	@if ! git diff --quiet -- api config || [ -n "$$(git ls-files --others --exclude-standard -- api config)" ]; then \
	  echo "generated files are stale; run 'make generate' and commit:"; git diff --stat -- api config; \
	  git ls-files --others --exclude-standard -- api config; exit 1; fi

fmt-check: ## Fail when gofmt would change a file.
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi

vet:
	go vet ./...

modcache-check: ## Fail when a script reads a module directory without downloading it first.
	@bash hack/check-modcache-reads.sh

control-plane: ## Build (or reuse) kube-apiserver, etcd, kwok… in the cache; prints the directory.
	@bash hack/build-control-plane.sh

test: ## Everything CI checks: generated files, gofmt, vet, all tests against a real control plane, the real-node tier.
	@assets=$$(bash hack/build-control-plane.sh); \
	$(MAKE) --no-print-directory verify-generated fmt-check vet modcache-check; \
	KUBEBUILDER_ASSETS=$$assets GO_TEST_FLAGS="$(GO_TEST_FLAGS)" FUZZ_TIME=$(FUZZ_TIME) bash hack/test.sh

# hack/test.sh runs the simulated-cluster tier (test/e2e) in the background beside the other
# packages (with REALNODE=skip: test/realnode then runs only its pure tests), the fuzz targets and
# the real-node tier, whose cluster tests need the real node this target makes (as root, hack/realnode.sh).
test-realnode: ## The real-node tier: a contained cluster with a real kubelet, the operator in pods, test/realnode.
	bash hack/realnode.sh test

fuzz: ## A short run of each fuzz target of pkg/status (FUZZ_TIME executions each).
	@for t in $(FUZZ_TARGETS); do go test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZ_TIME) $(FUZZ_FLAGS) ./pkg/status/ || exit 1; done

release-check: ## Validate .goreleaser.yaml with goreleaser (built from the module proxy; publishes nothing).
	bash hack/release-check.sh

perf: ## docs/performance.md's goal rows, side by side with LWS alone (about 100 minutes; tables in perf-results/).
	bash hack/perf.sh all

demo: ## The demo: simulated GPU cluster, operator hosting LWS, a two-group serving.
	bash hack/demo.sh up

demo-pd: ## The demo with roles: 2 prefill + 6 decode groups, then a new image rolled across both roles.
	bash hack/demo.sh up --roles

demo-down: ## Stop the demo.
	bash hack/demo.sh down

clean-cache: ## Remove the cached control-plane binaries.
	rm -rf "$${KUBECTL_LLM_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/kubectl-llm}/tools"
