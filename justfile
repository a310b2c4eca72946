# toolmock's recipes. Run them through `scripts/just RECIPE`, which installs
# `just` itself when the machine lacks it.

set shell := ["bash", "-euo", "pipefail", "-c"]

export DATABASE_URL := env_var_or_default("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
shared := justfile_directory() / ".." / "shared"

# List the recipes.
default:
    @just --list

# The main job: run the HealthPlus agent test suite (or FILE) on the embedded runtime.
run file="fixtures/healthplus/simulation.json" *args="": build
    "${CARGO_TARGET_DIR:-target}/debug/toolmock" run {{file}} {{args}}

# Serve the API on DATABASE_URL as deployed: migrate as the owner, then serve as the
# least-privilege role toolmock_app (needs TOOLMOCK_JWT_SECRET; docs/api.md). Scripted
# attempts need a worker: pass `--workers N`, or run `just worker` beside it.
serve *args="":
    cargo build --locked -p toolmock-api-bin
    "${CARGO_TARGET_DIR:-target}/debug/toolmock-api" migrate --database-url "$DATABASE_URL"
    "${CARGO_TARGET_DIR:-target}/debug/toolmock-api" serve --database-url "$(printf '%s' "$DATABASE_URL" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')" {{args}}

# Save a simulation folder's tools, mocks and agent as TENANT's library on
# DATABASE_URL (migrated), idempotently (docs/api.md, "Seeding a library").
seed folder="fixtures/healthplus" tenant="dev":
    cargo build --locked -p toolmock-api-bin
    "${CARGO_TARGET_DIR:-target}/debug/toolmock-api" seed {{folder}} --tenant {{tenant}} --database-url "$DATABASE_URL"

# The whole service on this machine: PostgreSQL, migrations, the API and two
# workers as toolmock_app, the HealthPlus seed and simulation through them; prints
# the outcome table, the UI's address and a token; Ctrl-C stops it all.
demo:
    scripts/demo.sh

# Run a worker (docs/operations.md) on DATABASE_URL as toolmock_app.
worker *args="":
    cargo build --locked -p toolmock-worker-bin
    "${CARGO_TARGET_DIR:-target}/debug/toolmock-worker" --database-url "$(printf '%s' "$DATABASE_URL" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')" {{args}}

# Build every package (debug).
build:
    cargo build --workspace --locked

# Build the Python wheel (the `toolmock` package and command) with the release script; ARGS: --profile, --out, --allow-modified.
wheel *args="":
    scripts/build-wheel.sh {{args}}

# Install what the tests need when it is missing, and start PostgreSQL (README: "What the two commands install and need").
setup:
    scripts/install-prerequisites.sh
    scripts/start-postgres.sh
    if [ -x scripts/install-mcp-servers.sh ]; then scripts/install-mcp-servers.sh; fi
    scripts/install-test-tools.sh
    scripts/install-browser.sh

# Run every test: unit, integration (real PostgreSQL, real MCP servers), doc tests, the Python package and its wheel in a clean environment, the tau2-bench retail yardstick and the same tasks through tau2-bench's own harness, conformance vectors.
test: setup
    scripts/test-setup.sh
    cargo test --workspace --locked
    scripts/test-readme.sh
    scripts/test-demo.sh
    scripts/python-tests.sh
    scripts/test-wheel.sh
    scripts/test-tau2.sh
    scripts/test-tau2-harness.sh
    just conformance
    just schemathesis
    just ui-test
    just example-agent

# Fuzz the running toolmock-api with schemathesis against its own OpenAPI document
# (no 500, no response that breaks the document); N examples per operation.
schemathesis examples="50":
    scripts/schemathesis.sh {{examples}}

# The example agent (examples/agents, the openai Python SDK) plays an external case
# through the real API, with the local conversation server as its model.
example-agent:
    scripts/example-agent.sh

# The UI in headless Chromium (playwright-core) against the real binary;
# screenshots of every page in target/ui-screenshots/.
ui-test:
    scripts/ui-tests.sh

# Run the shared conformance vectors (an independent set kept beside the repository; with CI=true they must be there) against the CLI.
conformance:
    cargo build --locked -p toolmock-cli
    if [ -x "{{shared}}/conformance/run" ]; then "{{shared}}/conformance/run" --toolmock "${CARGO_TARGET_DIR:-target}/debug/toolmock"; elif [ "${CI:-}" = "true" ]; then echo "no ../shared/conformance here, and CI=true: the shared vectors must run in CI" >&2; exit 1; else echo "no ../shared/conformance here; skipped"; fi

# Formatting, lints (warnings are errors) and documentation warnings.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets --locked -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
    scripts/count-public-items.sh toolmock-runtime 87
    scripts/check-file-lengths.sh 1000
    python3 scripts/check-docs.py

# What CI runs.
ci: lint test

# Benchmarks (criterion and the end-to-end scripts); figures go to docs/performance.md.
bench:
    cargo bench --workspace --locked
    if [ -x scripts/bench-eval.sh ]; then scripts/bench-eval.sh; fi
    if [ -x scripts/bench-dispatcher.sh ]; then scripts/bench-dispatcher.sh; fi
    scripts/bench-simulation.sh
    scripts/bench-python.sh
    scripts/bench-wheel.sh

# Load-test toolmock-api (release build, wrk, a scratch database) beside Stoplight Prism 5
# in the same run; figures go to docs/performance.md. Not part of `test`.
bench-api:
    scripts/bench-api.sh

# Fuzz one target or all of them (default 600 s each); not run by CI.
fuzz target="all" seconds="600":
    scripts/fuzz.sh {{target}} {{seconds}}
