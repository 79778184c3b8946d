# The two commands of the README:
#   make run    run the server on the embedded default (SQLite + files under ./data)
#   make test   run the whole test suite
# Both install what is missing first (Debian/Ubuntu, with apt): libvips-dev and
# fonts-dejavu-core (the text transformation's default font) for both; for the tests also chromium and npm (the admin UI's browser tests and
# axe-core), clang, lld, wasi-libc and compiler-rt for wasm32 (wasm-sdk's C
# example), imagemagick and mate-backgrounds (the stored variations' fidelity
# test: the benchmark's sources, real photographs), varnish and varnish-modules
# (the xkey vmod; api/cdn's test runs Varnish in front of a backend), redis-server (the rate
# limits' shared store, which an e2e test starts and stops), and the pinned emulators of the GCS and Azure blob tests
# (fake-gcs-server with go install, Azurite with npm; see TOOLS), and the npm
# tools that check api/openapi.yaml (Redocly CLI, openapi-typescript and
# TypeScript) and generate clients of it (@hey-api/openapi-ts,
# swagger-typescript-api, orval, openapi-fetch).

GO ?= go
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test deps test-deps build vet templ-check openapi-client openapi-check fuzz asan bench bench-bytes load load-mixed load-upload load-events load-video

deps:
	@pkg-config --exists vips 2>/dev/null || { \
		echo "installing libvips-dev (apt)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libvips-dev pkg-config gcc >/dev/null; }
	@fc-list 2>/dev/null | grep -q "DejaVu Sans" || { \
		echo "installing fonts-dejavu-core (apt), the text transformation's default font"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq fonts-dejavu-core fontconfig >/dev/null; }
	@command -v $(GO) >/dev/null || { echo "Go is missing: install Go 1.26 from https://go.dev/dl/"; exit 1; }

# What the tests need beyond deps, installed when missing: the apt packages,
# and the emulators the GCS and Azure blob-store tests start
# (fake-gcs-server, a Go program, and Azurite, an npm package), pinned to
# the versions storage/storagetest names and kept under TOOLS, one folder
# per version, so a second run installs nothing.
TOOLS ?= $(HOME)/.cache/vitrine-test-tools
FAKE_GCS_SERVER_VERSION = v1.56.1
AZURITE_VERSION = 3.35.0
FAKE_GCS_SERVER = $(TOOLS)/fake-gcs-server-$(FAKE_GCS_SERVER_VERSION)/fake-gcs-server
AZURITE = $(TOOLS)/azurite-$(AZURITE_VERSION)/node_modules/.bin/azurite-blob
# The checks of api/openapi.yaml (e2e/openapitools_test.go names the same
# versions): Redocly CLI lints it; openapi-typescript and tsc type-check a
# TypeScript client of it.
# tus-js-client runs the resumable upload e2e (e2e/tus_test.go names the
# same version).
TUS_JS_CLIENT_VERSION = 4.3.1
TUS_JS_CLIENT_DIR = $(TOOLS)/tus-js-client-$(TUS_JS_CLIENT_VERSION)
REDOCLY_VERSION = 2.77.0
OPENAPI_TS_VERSION = 7.13.0
TYPESCRIPT_VERSION = 5.9.3
REDOCLY_DIR = $(TOOLS)/redocly-$(REDOCLY_VERSION)
OPENAPI_TS_DIR = $(TOOLS)/openapi-typescript-$(OPENAPI_TS_VERSION)-typescript-$(TYPESCRIPT_VERSION)
REDOCLY = $(REDOCLY_DIR)/node_modules/.bin/redocly
OPENAPI_TS = $(OPENAPI_TS_DIR)/node_modules/.bin/openapi-typescript
# The TypeScript client generators e2e/tsclients_test.go runs (it names the
# same versions): @hey-api/openapi-ts beside TypeScript (its peer),
# swagger-typescript-api, orval, and openapi-fetch, the fetch wrapper of
# openapi-typescript's types. Each is the newest that runs on Node 20
# (@hey-api/openapi-ts 0.96 and orval 7.14 want Node 22).
HEY_API_VERSION = 0.95.0
SWAGGER_TS_API_VERSION = 13.13.0
ORVAL_VERSION = 7.13.2
OPENAPI_FETCH_VERSION = 0.17.0
HEY_API_DIR = $(TOOLS)/hey-api-openapi-ts-$(HEY_API_VERSION)-typescript-$(TYPESCRIPT_VERSION)
HEY_API = $(HEY_API_DIR)/node_modules/.bin/openapi-ts
SWAGGER_TS_API = $(TOOLS)/swagger-typescript-api-$(SWAGGER_TS_API_VERSION)/node_modules/.bin/swagger-typescript-api
ORVAL = $(TOOLS)/orval-$(ORVAL_VERSION)/node_modules/.bin/orval
OPENAPI_FETCH = $(TOOLS)/openapi-fetch-$(OPENAPI_FETCH_VERSION)/node_modules/openapi-fetch
# The AssemblyScript compiler the filter SDK in wasm-sdk/assemblyscript is
# built with (filters/conformance_test.go and wasm-sdk/Makefile name the
# same version). The Rust SDK is built with Debian's rustc and its wasm32-wasi
# standard library (apt: rustc, libstd-rust-dev-wasm32), called as
# /usr/bin/rustc since a rustup rustc on PATH may lack the target.
ASC_VERSION = 0.28.20
ASC = $(TOOLS)/assemblyscript-$(ASC_VERSION)/node_modules/.bin/asc

test-deps: deps
	@need=""; \
	command -v chromium >/dev/null || need="$$need chromium"; \
	command -v npm >/dev/null || need="$$need npm"; \
	command -v clang >/dev/null || need="$$need clang"; \
	command -v wasm-ld >/dev/null || need="$$need lld"; \
	command -v exiftool >/dev/null || need="$$need libimage-exiftool-perl"; \
	[ -x /usr/bin/convert ] || need="$$need imagemagick"; \
	command -v redis-server >/dev/null || need="$$need redis-server"; \
	command -v butteraugli_main >/dev/null || need="$$need libjxl-devtools"; \
	command -v ffmpeg >/dev/null || need="$$need ffmpeg"; \
	[ -d /usr/share/backgrounds/gnome ] || need="$$need gnome-backgrounds"; \
	[ -d /usr/share/backgrounds/mate/nature ] || need="$$need mate-backgrounds"; \
	[ -f /usr/lib/wasm32-wasi/libc.a ] || need="$$need wasi-libc"; \
	ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || need="$$need libclang-rt-dev-wasm32"; \
	[ -x /usr/bin/rustc ] || need="$$need rustc"; \
	[ -d /usr/lib/rustlib/wasm32-wasi ] || need="$$need libstd-rust-dev-wasm32"; \
	command -v varnishd >/dev/null || [ -x /usr/sbin/varnishd ] || need="$$need varnish"; \
	ls /usr/lib/*/varnish/vmods/libvmod_xkey.so >/dev/null 2>&1 || need="$$need varnish-modules"; \
	if [ -n "$$need" ]; then \
		echo "installing$$need (apt)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$need >/dev/null; \
	fi
	@[ -x $(FAKE_GCS_SERVER) ] || { \
		echo "installing fake-gcs-server $(FAKE_GCS_SERVER_VERSION) in $(TOOLS)"; \
		GOBIN=$(dir $(FAKE_GCS_SERVER)) $(GO) install github.com/fsouza/fake-gcs-server@$(FAKE_GCS_SERVER_VERSION); }
	@[ -x $(AZURITE) ] || { \
		echo "installing azurite $(AZURITE_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(TOOLS)/azurite-$(AZURITE_VERSION) azurite@$(AZURITE_VERSION) >/dev/null; }
	@[ -x $(REDOCLY) ] || { \
		echo "installing @redocly/cli $(REDOCLY_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(REDOCLY_DIR) @redocly/cli@$(REDOCLY_VERSION) >/dev/null; }
	@[ -d $(TUS_JS_CLIENT_DIR)/node_modules/tus-js-client ] || { \
		echo "installing tus-js-client $(TUS_JS_CLIENT_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(TUS_JS_CLIENT_DIR) tus-js-client@$(TUS_JS_CLIENT_VERSION) >/dev/null; }
	@[ -x $(ASC) ] || { \
		echo "installing assemblyscript $(ASC_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(TOOLS)/assemblyscript-$(ASC_VERSION) assemblyscript@$(ASC_VERSION) >/dev/null; }
	@[ -x $(OPENAPI_TS) ] && [ -x $(OPENAPI_TS_DIR)/node_modules/.bin/tsc ] || { \
		echo "installing openapi-typescript $(OPENAPI_TS_VERSION) and typescript $(TYPESCRIPT_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(OPENAPI_TS_DIR) \
			openapi-typescript@$(OPENAPI_TS_VERSION) typescript@$(TYPESCRIPT_VERSION) >/dev/null; }
	@[ -x $(HEY_API) ] || { \
		echo "installing @hey-api/openapi-ts $(HEY_API_VERSION) and typescript $(TYPESCRIPT_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(HEY_API_DIR) \
			@hey-api/openapi-ts@$(HEY_API_VERSION) typescript@$(TYPESCRIPT_VERSION) >/dev/null; }
	@[ -x $(SWAGGER_TS_API) ] || { \
		echo "installing swagger-typescript-api $(SWAGGER_TS_API_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(TOOLS)/swagger-typescript-api-$(SWAGGER_TS_API_VERSION) \
			swagger-typescript-api@$(SWAGGER_TS_API_VERSION) >/dev/null; }
	@[ -x $(ORVAL) ] || { \
		echo "installing orval $(ORVAL_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(TOOLS)/orval-$(ORVAL_VERSION) orval@$(ORVAL_VERSION) >/dev/null; }
	@[ -d $(OPENAPI_FETCH) ] || { \
		echo "installing openapi-fetch $(OPENAPI_FETCH_VERSION) in $(TOOLS)"; \
		npm install --no-audit --no-fund --silent --prefix $(TOOLS)/openapi-fetch-$(OPENAPI_FETCH_VERSION) \
			openapi-fetch@$(OPENAPI_FETCH_VERSION) >/dev/null; }

build: deps
	$(GO) build -o vitrine .

run: build
	./vitrine serve $(ARGS)

# staticcheck, pinned. govulncheck (golang.org/x/vuln/cmd/govulncheck@v1.9.0)
# is not run: it needs its vulnerability database, and this project's CI
# machines reach the Go module proxy and the npm registry but not
# vuln.go.dev ("govulncheck: fetching vulnerabilities: Get
# "https://vuln.go.dev/index/modules.json.gz": dial tcp: lookup vuln.go.dev
# on 10.255.255.53:53: no such host"). No mirror is reachable either: GOVULNDB takes an https://
# or file:// database, storage.googleapis.com/go-vulndb and osv.dev do not
# resolve, and the module proxy refuses golang.org/x/vulndb (403). Where
# vuln.go.dev is reachable, add to vet:
#	$(GO) run golang.org/x/vuln/cmd/govulncheck@v1.9.0 ./...
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.7.0

# e2e/layout is the layout as tests (e2e/README.md, Layout): the import rules
# (layering_test.go) and the size limits (size_test.go). It parses the tree
# and compiles nothing of the server, so it needs no cgo; go test's cache
# notices every file and folder it read.
vet: deps
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$unformatted" ]; then echo "not gofmt-formatted: $$unformatted"; exit 1; fi
	@$(MAKE) --no-print-directory templ-check
	@$(MAKE) --no-print-directory openapi-check
	$(GO) test ./e2e/layout

# The admin UI's templ output is committed; this fails when it is stale
# (and leaves it regenerated, ready to commit).
templ-check:
	@tmp=$$(mktemp -d); cp web/*_templ.go $$tmp/ 2>/dev/null; \
	$(GO) tool templ generate -path web >/dev/null 2>&1 || { rm -rf $$tmp; echo "templ generate failed"; exit 1; }; \
	for f in web/*_templ.go; do cmp -s $$f $$tmp/$$(basename $$f) || { echo "stale templ output: $$f (regenerated; commit it)"; stale=1; }; done; \
	rm -rf $$tmp; [ -z "$$stale" ]

# The Go client of api/openapi.yaml in e2e/openapiclient is what
# oapi-codegen, pinned, generates with its default options (types and
# client; e2e/openapiclient/config.yaml). openapi-client regenerates it;
# openapi-check fails when the committed file is stale (and leaves it
# regenerated, ready to commit), so the document cannot drift into one no
# generator reads.
OAPI_CODEGEN = github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2

openapi-client:
	cd e2e/openapiclient && $(GO) run $(OAPI_CODEGEN) -config config.yaml ../../api/openapi.yaml

openapi-check:
	@tmp=$$(mktemp); cp e2e/openapiclient/client.gen.go $$tmp; \
	$(MAKE) --no-print-directory openapi-client >/dev/null || { rm -f $$tmp; echo "oapi-codegen failed on api/openapi.yaml"; exit 1; }; \
	cmp -s e2e/openapiclient/client.gen.go $$tmp || { echo "stale generated client: e2e/openapiclient/client.gen.go (regenerated; commit it)"; stale=1; }; \
	rm -f $$tmp; [ -z "$$stale" ]

# Fuzz targets run a fixed number of inputs each (about 10 s apiece on a
# 2-core machine), not a fixed time: with a time limit, Go 1.26's fuzzing
# coordinator can fail a run with a bare "context deadline exceeded" as the
# time runs out, no failing input involved (golang/go#75804, fixed in Go
# 1.27). FUZZTIME (a count like 1000000x, or a time) overrides the counts.
# Minimising a new interesting input is capped at FUZZMINIMIZE: at Go's
# default of 60s a target whose inputs take milliseconds each (FuzzAnimated
# decodes and encodes GIF and WebP frames) spends most of a short run
# minimising, with the exec counter frozen.
FUZZTIME ?=
FUZZMINIMIZE ?= 3s
FUZZ = $(GO) test ./engine -run '^$$' -fuzzminimizetime $(FUZZMINIMIZE)
fuzzfor = -fuzztime $(or $(FUZZTIME),$(1))

fuzz: deps
	$(FUZZ) $(call fuzzfor,100000x) -fuzz '^FuzzParseSpec$$'
	$(FUZZ) $(call fuzzfor,100000x) -fuzz '^FuzzInspect$$'
	$(FUZZ) $(call fuzzfor,8000x) -fuzz '^FuzzAnimated$$'
	$(FUZZ) $(call fuzzfor,20000x) -fuzz '^FuzzBlur$$'
	$(FUZZ) $(call fuzzfor,200000x) -fuzz '^FuzzReadEXIF$$'

# The engine's C kernels (blur_*.c, the guest pixel copies) under
# AddressSanitizer: their pixel buffers become exact-size allocations
# (pixelpool_asan.go), so a read or write past an image fails the test.
asan: deps
	$(GO) test -asan -count=1 ./engine -run 'Blur|Radial|Motion|Adaptive|Guest'

test: vet test-deps
	VITRINE_TEST_FAKE_GCS_SERVER=$(FAKE_GCS_SERVER) VITRINE_TEST_AZURITE=$(AZURITE) \
		VITRINE_TEST_REDOCLY=$(REDOCLY) VITRINE_TEST_OPENAPI_TYPESCRIPT=$(OPENAPI_TS) \
		VITRINE_TEST_HEY_API=$(HEY_API) VITRINE_TEST_SWAGGER_TYPESCRIPT_API=$(SWAGGER_TS_API) \
		VITRINE_TEST_ORVAL=$(ORVAL) VITRINE_TEST_OPENAPI_FETCH=$(OPENAPI_FETCH) \
		VITRINE_TEST_ASC=$(ASC) VITRINE_TEST_ALL_GUESTS=1 \
		MALLOC_ARENA_MAX=2 $(GO) test -race -count=1 -timeout 30m ./...
	VITRINE_TEST_FAULTS=1 $(GO) test -count=1 -timeout 10m -run '^TestFaults$$' -v ./e2e/
	VITRINE_TEST_ALL_GUESTS=1 $(MAKE) --no-print-directory -C wasm-sdk test examples ASC=$(ASC)
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory asan

bench: deps
	$(GO) test ./engine ./api -run '^$$' -bench . -benchmem -benchtime 3s

# Auto quality's bytes and SSIMULACRA 2 scores against fixed q80 JPEG and
# WebP on real images (e2e/README.md, Perceptual quality: measurements): photographs, portraits,
# text, screenshots and flat graphics; installs the wallpaper and
# documentation packages and butteraugli_main (libjxl-devtools) when missing.
bench-bytes: deps
	e2e/load/bytes.sh

# wrk against the built binary: req/s, p50/p99 and peak RSS per workload.
load: build
	VITRINE_BIN=$(CURDIR)/vitrine e2e/load/run.sh

# The mixed workload (many sources, a Zipf request list) with the variant
# cache off and on: req/s, p50/p99, hit rate and peak RSS. ARGS="--imgproxy
# URL" replays the same list against an imgproxy on loopback.
load-mixed: build
	VITRINE_BIN=$(CURDIR)/vitrine e2e/load/mixed.sh $(ARGS)

# Upload latency with stored variations on and off (p50/p90/p99 per size).
load-upload: build
	VITRINE_BIN=$(CURDIR)/vitrine e2e/load/upload.sh

# Frames and posters of a video against ffmpeg run per request (e2e/load/video.sh).
load-video: build
	VITRINE_BIN=$(CURDIR)/vitrine e2e/load/video.sh

# Upload latency with events off, 3 webhooks and a NATS topic, and a slow
# webhook; delivery lag; outbox drain throughput.
load-events: build
	VITRINE_BIN=$(CURDIR)/vitrine e2e/load/events.sh
