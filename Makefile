# Quiver's front door. `make help` lists the targets.
GO ?= go
export GOFLAGS ?= -buildvcs=false

.PHONY: help run build test test-go test-sdk test-interop lint bench

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

run: ## run Quiver with the embedded defaults (SQLite in ./data, no Redis)
	$(GO) run ./cmd/quiver serve

build: ## build bin/quiver
	CGO_ENABLED=0 $(GO) build -o bin/quiver ./cmd/quiver

test: test-go test-sdk test-interop ## run every test (needs Postgres and Redis on localhost)

test-go: ## Go tests with the race detector
	$(GO) test -race -count=1 -timeout 20m ./...

test-sdk: build ## the Python and JavaScript SDK suites against a real quiver serve
	cd sdk/python && QUIVER_BIN=$(CURDIR)/bin/quiver python3 -m unittest discover -s tests
	cd sdk/js && QUIVER_BIN=$(CURDIR)/bin/quiver node --test test/

test-interop: build ## MCP interop with the official TypeScript SDK (client and server) against a real quiver serve
	cd interop/mcp-ts && npm ci --no-audit --no-fund && QUIVER_BIN=$(CURDIR)/bin/quiver node --test test/

lint: ## gofmt, go vet, staticcheck, and the binary's build for macOS and Windows
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) build -o /dev/null ./cmd/quiver
	GOOS=windows $(GO) build -o /dev/null ./cmd/quiver
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

bench: ## load test of the call endpoint vs an echo baseline, and MCP calls direct, via baseline proxies and via Quiver
	$(GO) run ./internal/bench
	$(GO) test -run '^$$' -bench 'MCPInterleaved' -benchtime 1x ./internal/e2e
	$(GO) test -run '^$$' -bench 'MCPReadCount' -benchtime 2s ./internal/e2e
