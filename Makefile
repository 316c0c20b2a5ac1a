# agentfleet: common tasks. `make help` lists them.
GO ?= go
PKGS ?= ./...

.PHONY: help test test-race lint fmt bench bench-go chaos fuzz demo

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

test: ## Run the tests (needs Redis on REDIS_URL, default 127.0.0.1:6379)
	$(GO) test $(PKGS)

test-race: ## Run the tests with the race detector (what CI runs)
	$(GO) test -race $(PKGS)

lint: ## go vet, gofmt check, staticcheck if installed
	$(GO) vet $(PKGS)
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null; then staticcheck $(PKGS); else echo "staticcheck not installed: skipped (go install honnef.co/go/tools/cmd/staticcheck@latest)"; fi

fmt: ## gofmt -w every Go file
	gofmt -w $$(git ls-files '*.go')

bench: ## Load benchmark (SIMULATED provider) vs bare JetStream and a minimal consumer, on local NATS + Redis; then the Go benchmarks
	$(GO) run ./cmd/loadgen --n 3000 --workers 2 --concurrency 16 --rounds 5 --out bench.json
	$(GO) run ./cmd/loadgen --latency 200ms --inflight 4000 --out bench-inflight.json
	$(GO) run ./cmd/loadgen --processes --n 3000 --workers 2 --concurrency 16 --rounds 3 --out bench-processes.json
	$(GO) run ./cmd/loadgen --processes --latency 200ms --inflight 4000 --out bench-inflight-process.json
	$(MAKE) bench-go

bench-go: ## Go benchmarks only (idempotency claim vs SET NX, replay vs bare publish, session appends, an invocation's Redis CPU)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 300x $(PKGS)

chaos: ## Chaos soak: 3 worker processes, 40% model + 10% tool faults, SIGKILLs, Redis and NATS restarts, DLQ replay, invariant check
	$(GO) run ./cmd/chaos --n $${N:-3000} --duration $${DURATION:-4m}

fuzz: ## Run each fuzz target briefly (FUZZTIME=10s)
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$t $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-10s} $$t || exit 1; \
	  done; done

demo: ## The main job with 25 requests end to end (embedded NATS + KV)
	$(GO) run ./cmd/worker --demo 25
