# The verbs a person types. Every target installs what it needs, so a fresh clone works with
# `make run` or `make test` alone.
SHELL := /bin/bash
# --test-force-exit: a test file's process ends once its tests did, even with a handle left open
# by a failed test (a server it started is killed then: test/helpers/children.ts); --test-timeout:
# a test that hangs fails after 10 minutes, and the run goes on. Either way a failure is reported,
# never a run that waits until CI's time is up.
NODE_TEST := node --import tsx --test --test-concurrency=1 --test-force-exit --test-timeout=600000
ADDON := native/node/spindle.linux-x64-gnu.node
NATIVE_SRC := $(shell find native/core/src native/node/src -name '*.rs') native/core/Cargo.toml native/node/Cargo.toml Cargo.toml

.PHONY: setup system-packages databases services build test test-rust test-unit test-e2e test-services test-nacos bench bench-start bench-rules bench-policies bench-client-db bench-operator bench-rewrite bench-topic-metrics bench-otel bench-proxy bench-scripts bench-schema bench-delayed bench-platform bench-cluster bench-codec bench-trie bench-store bench-store-sql bench-actions-sql bench-persistence bench-compare bench-soak bench-scale bench-console fuzz run cluster-demo clean typecheck console-api deb image

setup: node_modules/.installed

# npm install (not npm ci): it installs the locked versions too, but tolerates optional platform
# packages the registry does not serve (npm ci refuses the lock over @napi-rs/cli's unused
# cross-compile toolchain, whose android/darwin/... binaries are missing from our registry).
node_modules/.installed: package.json package-lock.json
	npm install --no-audit --no-fund
	touch $@

build: setup $(ADDON) lib/main.js dist/console/index.html

# The broker compiled: src/ bundled by esbuild into lib/ (scripts/build-lib.mjs: a bundle per
# thread entry, shared and on-demand code in chunks, packages left in node_modules), which
# bin/spindle runs. Nothing compiles TypeScript when the broker starts; tsx stays for the tests and
# bin/spindle-dev.mjs, and the type check is `make typecheck`.
LIB_SRC := $(shell find src types -type f) scripts/build-lib.mjs
lib/main.js: $(LIB_SRC) node_modules/.installed
	node scripts/build-lib.mjs

# The web console (console/: Preact, htm, uPlot), bundled and minified by Vite into dist/console,
# which the admin server serves at /. Vite prints each file's size, gzipped too.
CONSOLE_SRC := $(shell find console -type f)
dist/console/index.html: $(CONSOLE_SRC) node_modules/.installed
	npx vite build --config console/vite.config.js

$(ADDON): $(NATIVE_SRC) node_modules/.installed
	npx napi build --platform --release --manifest-path native/node/Cargo.toml \
	  --package-json-path package.json --output-dir native/node --no-js --dts index.d.ts
	touch $@

# The Debian package, build/deb/spindle_<version>_amd64.deb (scripts/build-deb.sh: dpkg-deb, with
# Node.js 20 and nats-server inside; deploy/README.md installs it). DEB_VERSION overrides the
# version of package.json, e.g. make deb DEB_VERSION=0.1.1; DEB_COMPRESS=gzip builds faster than xz.
DEB_VERSION ?= $(shell node -p "require('./package.json').version")
deb: build
	./scripts/ensure-deb-tools.sh
	./scripts/build-deb.sh $(DEB_VERSION)
	lintian --fail-on error build/deb/spindle_$(DEB_VERSION)_amd64.deb

# An OCI image, build/image/spindle_<version>.oci.tar (an oci-archive): Debian 12 minbase from
# debootstrap plus the package, assembled with buildah from scratch (scripts/build-image.sh).
image: deb
	./scripts/build-image.sh $(DEB_VERSION)

system-packages:
	./scripts/ensure-system-packages.sh

# Every server at once, for the benchmarks and by hand; make test-services starts only those its
# files declare (test/helpers/tiers.ts).
# PostgreSQL and MariaDB for the store tests (installed, started, test user and database created).
databases:
	./scripts/ensure-databases.sh

# Redis, Kafka (KRaft, from the Maven Central jars) and FerretDB (MongoDB wire protocol over
# SQLite) for the data source tests, RabbitMQ for the command tests, Mailpit (SMTP on 1025, its
# HTTP API on 8025) for the email notification tests: installed or built when missing, started
# when not running. nats-server is only installed: the cluster tests start their own.
services:
	./scripts/ensure-redis.sh
	./scripts/ensure-kafka.sh
	./scripts/ensure-ferretdb.sh
	./scripts/ensure-rabbitmq.sh
	./scripts/ensure-rocketmq.sh
	./scripts/ensure-pulsar.sh
	./scripts/ensure-mailpit.sh
	./scripts/ensure-nats.sh

test: build system-packages typecheck test-rust test-unit test-e2e test-services

test-rust:
	cargo test -p spindle-core --release

# The test files in three tiers, by the "// needs:" line of each file's first comment block (none:
# unit; broker, nats, mosquitto, chromium, helm, slapd, otelcol: e2e; a shared server such as postgresql or kafka:
# services). scripts/test-tier.ts runs the ensure scripts of what the tier's files declare, then
# NODE_TEST on them; test/helpers/tiers.test.ts fails when a declaration and the file's imports
# disagree. FILES runs some files of the tier, e.g. make test-services FILES=test/store/postgres.test.ts
TEST_TIER := node --import tsx scripts/test-tier.ts

# No broker and no server to start: the engine in memory, codecs, config, stores on files (a test's
# own HTTP stub on 127.0.0.1 counts as neither). system-packages: mosquitto_passwd for the
# password file tests.
test-unit: build system-packages
	$(TEST_TIER) unit $(FILES) -- $(NODE_TEST)

# Brokers with sockets (in this process or as `spindle` processes), and the nats-server,
# Mosquitto, slapd and Chromium the tests start themselves on free ports; the Helm chart's offline checks
# (helm and deploy/helm/validate, from scripts/ensure-helm.sh).
test-e2e: build system-packages
	$(TEST_TIER) e2e $(FILES) -- $(NODE_TEST)

# Files that need shared servers (PostgreSQL, MariaDB, Redis, Kafka, ...): only the declared ones
# are installed and started.
test-services: build system-packages
	$(TEST_TIER) services $(FILES) -- $(NODE_TEST)

# The NACOS command against a real Nacos 3 server. Not part of `make test` (its file is named
# *.nacos-test.ts, which no tier picks up): the Nacos server is published on no
# registry a fresh machine reaches (only its client artifacts are on Maven Central), so
# ensure-nacos.sh builds it from a Nacos source tree (NACOS_SRC) or uses a jar built before
# (~/.cache/spindle/nacos-3.0.3/). See docs/features/commands.md, NACOS.
test-nacos: build
	./scripts/ensure-nacos.sh
	$(NODE_TEST) test/commands/nacos.nacos-test.ts

# The type check, then the dependency rules of src/ (.dependency-cruiser.cjs: no import cycle,
# type-only imports included; imports only along the layer order of docs/design/data-path.md), then
# the console: its API types against the routes (stale: fails) and its JavaScript checked by tsc.
typecheck: build
	npx tsc --noEmit -p tsconfig.json
	npx depcruise src --config .dependency-cruiser.cjs
	node --import tsx scripts/gen-console-api.ts --check
	npx tsc -p console/tsconfig.json

# The console's API types (console/src/api-types.d.ts) written again from the admin API's OpenAPI
# document (scripts/gen-console-api.ts); make typecheck fails while they are stale.
console-api: build
	node --import tsx scripts/gen-console-api.ts

bench: build bench-start bench-codec bench-trie bench-store bench-store-sql bench-persistence bench-actions-sql bench-rules bench-policies bench-client-db bench-operator bench-rewrite bench-topic-metrics bench-proxy bench-scripts bench-schema bench-platform bench-delayed bench-compare

# Start to MQTT open, to /health UP, and idle RSS, with one worker and one per core (the targets of
# issue 26: 500 ms, 1 s, 100 MB with two workers): bench/results/start.{md,json}.
bench-start: build
	node --import tsx bench/start.ts

# The web console: bundle size, first render of the overview in Chromium, the screenshots of docs/features/console.md.
bench-console: build system-packages
	node --import tsx bench/console.ts

# Delayed publish: 100,000 messages held, due within a short window; firing accuracy at a
# subscriber (p50/p99/max; target p99 within 50 ms): bench/results/delayed.{md,json}.
bench-delayed: build
	node --import tsx bench/delayed.ts

bench-codec: build
	node --import tsx bench/codec.ts

bench-trie: build
	node --import tsx --expose-gc bench/trie.ts

bench-store: build
	node --import tsx bench/store-local.ts

# save_postgresql / save_mysql rule actions: rows written per second at saturation.
bench-actions-sql: build databases
	node --import tsx bench/actions-sql.ts

# The rule engine's targets: fan-in with 100 idle rules and with a republish rule, save_postgresql
# and save_kafka at 20 000 msgs/s and at saturation, and a 10 s PostgreSQL outage (issue 12).
bench-rules: build databases services
	cargo build --release -p spindle-loadgen
	node --import tsx bench/rules.ts

# Scripts (issue 14): fan-in QoS 0 with a one-line script on every message against none.
bench-scripts: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/scripts.ts

# The schema registry (issue 29): decode cost per message (protobuf, avro, json) and fan-in with a
# schema check on the topic against none: bench/results/schema.{md,json}.
bench-schema: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/schema.ts
	node --import tsx bench/schema-offload.ts

# The cluster (issue 16): two nodes over NATS against clustering off, local-only and across nodes.
bench-cluster: build
	cargo build --release -p spindle-loadgen
	./scripts/ensure-nats.sh
	node --import tsx bench/cluster.ts

# The control platform (issue 15): a tenant's fan-in against anonymous clients; set
# PLATFORM_BEFORE_ROOT to a checkout before the platform to compare anonymous traffic with it.
bench-platform: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/platform.ts

# Authentication and ACL policies (issue 13): connections/s with no auth, static users and a
# postgresql auth policy (bcrypt, cache cold and warm), fan-in QoS 1 with and without a postgresql
# ACL policy. POLICIES_ROUNDS, POLICIES_USERS, POLICIES_CONNRATE_SECONDS, POLICIES_FANIN_SECONDS.
# Operator tools (issue 27): 10,000 bans, 10,000 built-in clients and rate limits against a plain
# broker, pinned: bench/results/operator.{md,json}.
bench-operator: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/operator.ts

# Topic rewrite (issue 29): QoS 0 fan-in with no rule against 100 rules matching nothing, each
# broker pinned: bench/results/rewrite.{md,json}.
bench-rewrite: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/rewrite.ts

# Topic metrics on QoS 0 fan-in: 100 filters matching nothing, and matching, against none:
# bench/results/topic-metrics.{md,json}.
bench-topic-metrics: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/topic-metrics.ts

# OpenTelemetry traces: QoS 0 fan-in with tracing off, on with sampling 0, and at 1 % and 10 %
# (targets: sampling 0 within 3 % of off, 1 % within 10 %): bench/results/otel.{md,json}.
bench-otel: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/otel.ts

# Built-in client database (issue 27): CONNECT rate with and without the verified-credentials
# cache, against no authentication: bench/results/client-db.{md,json}.
bench-client-db: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/client-db.ts

# PROXY protocol (issue 28): the CONNECT rate with a v2 and a v1 header against none, pinned:
# bench/results/proxy.{md,json}. PROXY_ROUNDS, PROXY_SECONDS, PROXY_IO, PROXY_CASES.
bench-proxy: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/proxy.ts

bench-policies: build databases
	cargo build --release -p spindle-loadgen
	node --import tsx bench/policies.ts

# Concurrent addMessage on the MYSQL and POSTGRESQL stores (starts the databases when missing).
bench-store-sql: build databases
	node --import tsx bench/store-sql.ts

# Persistent QoS 1 fan-in for each store (starts PostgreSQL and MariaDB when missing).
bench-persistence: build databases
	node --import tsx bench/persistence.ts

# Spindle against Mosquitto (installed from Debian when missing), Aedes (npm dev dependency),
# rumqttd (cargo install when missing) and Mochi MQTT (go install when missing), driven by
# bench/loadgen; writes bench/results/<date>/ and the summary table of docs/development/benchmarks.md. COMPARE_ARGS
# passes options, e.g. make bench-compare COMPARE_ARGS="--quick".
bench-compare: build
	./scripts/ensure-bench-brokers.sh
	cargo build --release -p spindle-loadgen
	node --import tsx bench/compare.ts $(COMPARE_ARGS)

# A connection soak: 100 000 MQTT connections opened and closed against one Spindle (clean
# DISCONNECTs, FINs, RSTs, closes before and halfway through CONNECT); fails when the broker keeps
# file descriptors or memory afterwards (writes bench/results/<date>/soak.{json,md}). SOAK_ARGS
# passes options, e.g. make bench-soak SOAK_ARGS="--count 5000".
bench-soak: build
	node --import tsx bench/soak-connections.ts $(SOAK_ARGS)

# A million idle MQTT connections to one Spindle from 127.0.0.2, .3, ... (spindle-loadgen
# idle-scale): RSS per connection, time to connect them, and what stopped it short. Needs the kernel
# settings of docs/operating/deployment.md; it says which are missing. SCALE_ARGS passes options,
# e.g. make bench-scale SCALE_ARGS="--count 20000 --per-source 10000".
bench-scale: build
	cargo build --release -p spindle-loadgen
	node --import tsx bench/scale-idle.ts $(SCALE_ARGS)

# Brief coverage-guided runs of each fuzz target (cargo-fuzz; nightly when rustup has it,
# otherwise the stable compiler with RUSTC_BOOTSTRAP).
FUZZ_SECONDS ?= 30
fuzz:
	./native/fuzz/run.sh $(FUZZ_SECONDS)

# Starts the broker with the defaults (MQTT on 1883, WebSocket on 8083 at /mqtt); pass options
# with ARGS, e.g. make run ARGS="--config spindle.yaml".
run: build
	./bin/spindle $(ARGS)

# Three nodes of a cluster on this machine (MQTT 1883..1885, admin 8080..8082, each with its own
# nats-server: clients 4222..4224, routes 6222..6224), until Ctrl-C. See scripts/cluster-demo.sh
# for the variables that move the ports; docs/operating/cluster.md.
cluster-demo: build
	./scripts/cluster-demo.sh $(ARGS)

clean:
	cargo clean
	rm -rf node_modules native/node/*.node native/node/index.d.ts lib dist build
