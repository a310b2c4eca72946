# Sourced by the scripts that test the running API (schemathesis.sh,
# ui-tests.sh): builds toolmock-api, serves it on a fresh database of its own
# on a free port, and stops it and drops the database when the script exits.
#
#   . scripts/serve-api.sh NAME    then: $bin, $url, $TOOLMOCK_JWT_SECRET
#
# Needs DATABASE_URL (scripts/test-env.sh) and CARGO_TARGET_DIR.

serve_name="$1"
cargo build --locked -q -p toolmock-api-bin
bin="$CARGO_TARGET_DIR/debug/toolmock-api"

serve_db="toolmock_${serve_name}_$$"
psql "$DATABASE_URL" -qc "CREATE DATABASE $serve_db" >/dev/null

export TOOLMOCK_JWT_SECRET="$serve_name secret, at least thirty-two bytes long"
serve_port=$((20000 + RANDOM % 20000))
# Migrated as the owner, served as the least-privilege role (docs/api.md).
serve_owner_url="${DATABASE_URL%/*}/$serve_db"
"$bin" migrate --database-url "$serve_owner_url" >/dev/null
serve_app_url="$(printf '%s' "$serve_owner_url" | sed -E 's#^(postgres(ql)?://)([^@/]*@)?#\1toolmock_app@#')"
# One in-process worker runs the scripted attempts the API queues
# (docs/operations.md); a one-process setup, as the tests need.
"$bin" serve --database-url "$serve_app_url" --bind "127.0.0.1:$serve_port" --workers 1 \
    --log-format json 2>"$CARGO_TARGET_DIR/$serve_name-server.log" &
serve_pid=$!
stop_api() {
    kill -TERM "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $serve_db WITH (FORCE)" >/dev/null 2>&1 || true
}
trap stop_api EXIT
url="http://127.0.0.1:$serve_port"
for _ in $(seq 1 100); do
    curl -fsS "$url/readyz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$url/readyz" >/dev/null
