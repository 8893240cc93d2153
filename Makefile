# retry-operator. `make help` lists the targets; `make demo` and `make test` are
# the whole set-up on a machine that has Go.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(BIN)/controller-gen
GO_TEST_FLAGS ?= -race
# Tests start real control planes; two cores share them, so keep packages serial.
GO_TEST_P ?= 1

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs and the ClusterRole from markers.
	$(CONTROLLER_GEN) rbac:roleName=retry-operator-manager crd paths="./..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: vet ## gofmt check and go vet (no extra linter to install).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: controlplane
controlplane: ## Build kube-apiserver, etcd and kubectl from Go modules into bin/k8s/ (once).
	@hack/controlplane.sh >/dev/null

.PHONY: test
test: ## Unit tests and envtest integration tests against a real control plane.
	@assets=$$(hack/controlplane.sh); \
	echo "KUBEBUILDER_ASSETS=$$assets"; \
	KUBEBUILDER_ASSETS=$$assets go test $(GO_TEST_FLAGS) -p $(GO_TEST_P) ./...

.PHONY: bench
bench: ## Throughput benchmark: 2,000 tasks against a loopback server (prints figures; BENCH_WORKERS/BENCH_DISPATCHERS tune the manager).
	@assets=$$(hack/controlplane.sh); \
	KUBEBUILDER_ASSETS=$$assets go test -run '^$$' -bench BenchmarkTasks -benchtime 1x -timeout 30m ./test/bench/

.PHONY: bench-storm
bench-storm: ## Retry-storm benchmark: 1,000 tasks vs a 429 wall, with and without a RetryQueue (prints figures).
	@assets=$$(hack/controlplane.sh); \
	KUBEBUILDER_ASSETS=$$assets go test -run '^$$' -bench BenchmarkStorm -benchtime 1x -timeout 30m ./test/storm/

##@ Build

.PHONY: build
build: ## Build the manager and the kubectl plugin into bin/.
	go build -o $(BIN)/manager ./cmd/manager
	go build -o $(BIN)/kubectl-retrytask ./cmd/kubectl-retrytask

.PHONY: run
run: ## Run the manager against the current kubeconfig.
	go run ./cmd/manager --leader-elect=false

.PHONY: demo
demo: ## Local control plane, CRDs, manager, a rate-limited demo API and the samples.
	@assets=$$(hack/controlplane.sh); \
	KUBEBUILDER_ASSETS=$$assets go run ./hack/demo

##@ Deployment

.PHONY: install
install: ## Install the CRDs into the current cluster.
	$(KUBECTL) apply -f config/crd/bases

.PHONY: uninstall
uninstall: ## Remove the CRDs from the current cluster.
	$(KUBECTL) delete --ignore-not-found -f config/crd/bases

.PHONY: deploy
deploy: ## Deploy the operator with kustomize (config/default).
	$(KUBECTL) apply -k config/default

.PHONY: undeploy
undeploy: ## Remove the operator.
	$(KUBECTL) delete --ignore-not-found -k config/default

KUBECTL ?= $(shell k=$$(command -v kubectl); if [[ -n "$$k" ]]; then echo "$$k"; else echo "$$(hack/controlplane.sh)/kubectl"; fi)

$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen
