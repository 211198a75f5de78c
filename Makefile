# tickgate — `make dev` runs the whole stack locally, `make test` runs every test.
# Both install and build what they need (PostgreSQL server package, the pinned Temporal CLI).

GO        ?= go
DEV       := .dev
BIN       := $(DEV)/bin
TEMPORAL  := $(BIN)/temporal
# The real server (TICKGATE_DEV_TEMPORAL=server, make test-cluster, chaos -temporal server):
# go.temporal.io/server at the version the pinned CLI embeds, its SQL schema tool and the
# Web UI server, from the same tools module.
TEMPORAL_SERVER   := $(BIN)/temporal-server
TEMPORAL_SQL_TOOL := $(BIN)/temporal-sql-tool
TEMPORAL_UI       := $(BIN)/temporal-ui-server
SERVER_TOOLS      := $(TEMPORAL_SERVER) $(TEMPORAL_SQL_TOOL) $(TEMPORAL_UI)
SQLC      := $(BIN)/sqlc
OAPI_CODEGEN := $(BIN)/oapi-codegen
STATICCHECK  := $(BIN)/staticcheck
GOSEC        := $(BIN)/gosec
TICKGATE  := bin/tickgate
TEST_FLAGS ?= -race -count=1 -timeout 45m

.PHONY: all build chromium dev test test-short test-cluster test-deploy test-observability lint generate schema generate-client generate-cli-docs tools server-tools postgres bench bench-rollouts bench-devices bench-schedules bench-api bench-scale bench-apply clean record-histories chaos fuzz web-vendor bench-console

all: build

build:
	$(GO) build -o $(TICKGATE) ./cmd/tickgate

# The Temporal dev server + Web UI, from the pinned CLI in its own module (tools/temporal).
$(TEMPORAL): tools/temporal/go.mod tools/temporal/go.sum
	@mkdir -p $(BIN)
	cd tools/temporal && $(GO) build -o ../../$(TEMPORAL).tmp github.com/temporalio/cli/cmd/temporal
	mv $(TEMPORAL).tmp $(TEMPORAL)

$(TEMPORAL_SERVER): tools/temporal/go.mod tools/temporal/go.sum
	@mkdir -p $(BIN)
	cd tools/temporal && $(GO) build -o ../../$@.tmp go.temporal.io/server/cmd/server
	mv $@.tmp $@

$(TEMPORAL_SQL_TOOL): tools/temporal/go.mod tools/temporal/go.sum
	@mkdir -p $(BIN)
	cd tools/temporal && $(GO) build -o ../../$@.tmp go.temporal.io/server/cmd/tools/sql
	mv $@.tmp $@

$(TEMPORAL_UI): tools/temporal/go.mod tools/temporal/go.sum
	@mkdir -p $(BIN)
	cd tools/temporal && $(GO) build -o ../../$@.tmp github.com/temporalio/ui-server/v2/cmd/server
	mv $@.tmp $@

server-tools: $(SERVER_TOOLS)

$(SQLC): tools/sqlc/go.mod tools/sqlc/go.sum
	@mkdir -p $(BIN)
	cd tools/sqlc && $(GO) build -o ../../$(SQLC) github.com/sqlc-dev/sqlc/cmd/sqlc

$(OAPI_CODEGEN): tools/oapi-codegen/go.mod tools/oapi-codegen/go.sum
	@mkdir -p $(BIN)
	cd tools/oapi-codegen && $(GO) build -o ../../$(OAPI_CODEGEN) github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen

# The linters make lint runs, each pinned in a tools module of its own.
$(STATICCHECK): tools/staticcheck/go.mod tools/staticcheck/go.sum
	@mkdir -p $(BIN)
	cd tools/staticcheck && $(GO) build -o ../../$@.tmp honnef.co/go/tools/cmd/staticcheck
	mv $@.tmp $@

$(GOSEC): tools/gosec/go.mod tools/gosec/go.sum
	@mkdir -p $(BIN)
	cd tools/gosec && $(GO) build -o ../../$@.tmp github.com/securego/gosec/v2/cmd/gosec
	mv $@.tmp $@

# The pinned oapi-codegen is built here too: client's TestGeneratedClientIsFresh runs it from
# the module cache (no network), which building it fills.
tools: $(TEMPORAL) $(OAPI_CODEGEN) postgres

# Headless Chromium for the dashboard's browser test (e2e): Debian's chromium package.
chromium:
	@scripts/ensure-chromium.sh >/dev/null

# The dashboard's vendored libraries (web/static/vendor/: uPlot and its licence), refreshed
# from the npm registry; UPLOT_VERSION=x.y.z picks another version. Not run by any build:
# the files are committed, so building needs no npm.
web-vendor:
	scripts/web-vendor.sh

# PostgreSQL server binaries: Debian's package when they are missing.
postgres:
	@scripts/ensure-postgres.sh

# TICKGATE_DEV_TEMPORAL=server make dev: the real server on PostgreSQL instead of the dev server.
# TICKGATE_DEV_TRACES=1 make dev: also the trace viewer on 127.0.0.1:16686, the worker's and the
# API's traces exported to it (docs/tracing.md).
dev: build $(TEMPORAL) postgres $(if $(filter server,$(TICKGATE_DEV_TEMPORAL)),$(SERVER_TOOLS))
	$(TICKGATE) dev

test: tools server-tools chromium
	$(MAKE) lint
	$(GO) test $(TEST_FLAGS) ./...
	$(MAKE) test-cluster test-deploy test-observability

# deploy/ rendered with kustomize's Go library and decoded into Kubernetes API types, in a
# module of its own (deploy/check) so those dependencies stay out of tickgate's go.mod.
test-deploy:
	cd deploy/check && $(GO) vet ./... && $(GO) test -count=1 ./...

# The shipped alert rules and Grafana dashboard (deploy/observability) parsed with
# Prometheus's own packages and run against a live stack (the harness starts PostgreSQL and
# Temporal), in a module of its own (deploy/observability/check) for Prometheus's dependencies.
test-observability: tools
	cd deploy/observability/check && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# The end-to-end suite once more on the production shape: the real Temporal server on
# PostgreSQL with 4 history shards instead of the dev server. Part of `make test` (it adds
# about five minutes on a 2-core machine); alone, it is the quick check of a change that
# touches how tickgate talks to Temporal.
test-cluster: tools server-tools chromium
	TICKGATE_TEST_TEMPORAL=server $(GO) test $(TEST_FLAGS) ./e2e/

# gofmt, go vet, staticcheck (with its default checks) and gosec on every module make test
# tests (the tools modules are not linted). A finding is fixed, or excluded on its line with
# its reason: `//lint:ignore CHECK reason` above the line for staticcheck (staticcheck reports
# a directive that no longer matches), `// #nosec Gxxx -- reason` on the line for gosec (which
# refuses one without its rule or its reason). gosec reads the code that ships, not
# the tests (its default); staticcheck reads both. Left out of gosec, with their reasons:
# testdata (fixtures, as go's ./... leaves them out) and generated code (store/dbgen,
# client/client.gen.go: their inputs, store/queries and api/openapi.yaml, are what is read).
LINT_MODULES := . deploy/check deploy/observability/check
GOSEC_FLAGS  := -quiet -nosec-require-rules -nosec-require-justification -exclude-dir=testdata -exclude-generated
lint: $(STATICCHECK) $(GOSEC)
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" && exit 1)
	$(GO) vet ./...
	for m in $(LINT_MODULES); do \
		(cd $$m && $(abspath $(STATICCHECK)) ./... && $(abspath $(GOSEC)) $(GOSEC_FLAGS) ./...) || exit 1; \
	done

# Fuzz each native fuzz target for $(FUZZTIME); a failing input lands in the package's
# testdata/fuzz/<Target>/, whose committed entries `make test` replays. Not in `make test`.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzSpec$$' -fuzztime $(FUZZTIME) ./internal/schedulespec/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/version/
	$(GO) test -run '^$$' -fuzz '^FuzzCompare$$' -fuzztime $(FUZZTIME) ./internal/version/
	$(GO) test -run '^$$' -fuzz '^FuzzNumericRuns$$' -fuzztime $(FUZZTIME) ./internal/version/
	$(GO) test -run '^$$' -fuzz '^FuzzCreateScheduleRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzUpdateScheduleRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzRolloutRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzRequestBodies$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzTokenRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzCalendarRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzFreezeRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzBulkCreateRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzBulkStateRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzTaskResultRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzRotateSecretRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzBulkRedriveRequest$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzScheduleCommand$$' -fuzztime $(FUZZTIME) ./api/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckOneStatement$$' -fuzztime $(FUZZTIME) ./domain/
	$(GO) test -run '^$$' -fuzz '^FuzzRouteParams$$' -fuzztime $(FUZZTIME) -parallel 1 ./api/

# Re-record workflows/testdata/*.json (the replay tests' histories) from a real run: e2e/record_histories_test.go.
record-histories: tools
	TICKGATE_RECORD_HISTORIES=1 $(GO) test -count=1 -run '^(TestHistoriesOfARealRunReplay|TestScheduleCommandsHistoryReplays|TestScheduleOneTimeReloadHistoryReplays|TestScheduleTakeoverHistoryReplays|TestHTTPDeliveryHistoryReplays|TestHTTPDeliveryAfterFirstAttemptHistoryReplays|TestScheduleCalendarsHistoryReplays|TestMaxConcurrentOnTheWholeProduct|TestScheduleResidentHistoryReplays|TestScheduleFirePremiseHistoryReplays)$$' -v ./e2e/

# Regenerate store/dbgen from store/queries/*.sql and migrations/*.sql, the typed client
# from api/openapi.yaml and the CLI's reference pages (docs/cli/).
generate: $(SQLC) generate-client generate-cli-docs
	$(SQLC) generate

# The typed Go client (client/client.gen.go) from api/openapi.yaml, with the pinned
# oapi-codegen; client's TestGeneratedClientIsFresh fails until this is run after an edit.
generate-client: $(OAPI_CODEGEN)
	$(OAPI_CODEGEN) -config client/oapi-codegen.yaml -o client/client.gen.go api/openapi.yaml

# The CLI's reference pages (docs/cli/*.md), one per command; cli's TestReferencePagesAreFresh
# fails until this is run after a change to a command.
generate-cli-docs:
	$(GO) run ./internal/dev/clidocs docs/cli

# Write store/schema.sql, the current schema in one readable file: the migrations applied to a
# throwaway database on the test harness's PostgreSQL cluster (.dev/test), dumped by the
# machine's pg_dump and normalised (internal/testing/schemadump). Run it after adding or
# merging a migration: TestSchemaFileIsCurrent (./store) fails until then.
schema:
	$(GO) run ./internal/testing/schemadump/cmd/schema

bench: bench-schedules bench-rollouts bench-devices

clean:
	rm -rf bin

# Benchmarks: programs under bench/ that run on the local stack in make dev's shape and
# settings (TICKGATE_DEV_TEMPORAL=server picks the real server as for make dev) and print a
# Markdown table ending with one `RESULT key=value …` line. Not tests. BENCH_FLAGS passes
# flags, e.g. `make bench-schedules BENCH_FLAGS=-capacity` (go run ./bench/<name> -h lists them).
bench-schedules: tools
	$(GO) run ./bench/schedules $(BENCH_FLAGS)

bench-rollouts: tools
	$(GO) run ./bench/rollouts $(BENCH_FLAGS)

# Many schedules: N created through the API (default 100,000; BENCH_FLAGS=-million for a
# million), the idle cost and bytes per schedule, and all of them due at one tick.
bench-scale: tools
	$(GO) run ./bench/scale $(BENCH_FLAGS)

bench-devices: tools
	$(GO) run ./bench/devices $(BENCH_FLAGS)

# The console's reads at scale: the schedules list's pages and filters over 10,000 schedules
# and the window statistics over 1.7 million runs, with and without the console's indexes.
bench-console: tools
	$(GO) run ./bench/console $(BENCH_FLAGS)

# Schedules as code at size: 1,000 manifest files applied through the CLI, again (0 changes),
# and with edits and --prune (docs/gitops.md).
bench-apply: tools
	$(GO) run ./bench/apply $(BENCH_FLAGS)

# The surface's per-request cost: token auth, idempotent replay, /metrics scrape.
bench-api: postgres
	$(GO) run ./bench/api

# The chaos run (issue #7): the stack on its own PostgreSQL cluster and Temporal dev server,
# two workers and two APIs under 220 schedules, a 2,000-task rollout and device dispatch over
# 10 PCs, while workers are killed 20 times and PostgreSQL, Temporal and the API restarted.
# Prints the faults and invariant checks and exits non-zero on any breach. Not in `make test`
# (a short profile of it is: e2e/chaos_test.go, tickgate chaos -profile short). CHAOS_FLAGS=-seed N repeats a fault plan;
# CHAOS_FLAGS='-temporal server' runs it on the real server (PostgreSQL, several shards); on
# 2 cores add -event-schedules 50 (a fire costs the real server ~2.4x the dev server's CPU).
chaos: build tools server-tools
	$(TICKGATE) chaos -profile full $(CHAOS_FLAGS)
