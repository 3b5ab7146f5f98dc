#!/usr/bin/env bash
# Runs Permit's Python SDK, unchanged, against `gatehouse serve`: flows.py (the SDK's public API) and the SDK's own
# tests/, once on a fresh SQLite data folder and once on a fresh PostgreSQL schema. See docs/compatibility.md.
#
#   scripts/permit-python-sdk/run.sh <permit-python source> [sqlite|postgres|both]
#
# PERMIT_PYTHON_SRC may name the source instead of the first argument. Settings: PERMIT_PYTHON_VENV (the cached
# venv, default ~/.cache/gatehouse/permit-python-venv), PYSDK_DATABASE_URL (default
# postgres://postgres@127.0.0.1:5432/test), PYSDK_FLOWS=<part of a flow's name> (only those; "-" for none),
# PYSDK_SDK_TESTS=<part of a test file's path> (only those) or 0 (none).
set -euo pipefail

src="${1:-${PERMIT_PYTHON_SRC:-}}"
databases="${2:-both}"
if [[ -z "$src" || ! -f "$src/permit/__init__.py" ]]; then
  echo "usage: $0 <permit-python source folder> [sqlite|postgres|both] (or set PERMIT_PYTHON_SRC)" >&2
  exit 2
fi
src="$(cd "$src" && pwd)"
case "$databases" in
  both) databases="sqlite postgres" ;;
  sqlite | postgres) ;;
  *) echo "databases: sqlite, postgres or both, not '$databases'" >&2; exit 2 ;;
esac
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
pg_url="${PYSDK_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"

# The venv holds the SDK's dependencies and pytest; the SDK itself is imported from the source (PYTHONPATH), so it
# runs as given. It is rebuilt when the SDK's requirements change.
venv="${PERMIT_PYTHON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/permit-python-venv}"
stamp="$(cat "$src/requirements.txt" "$src/requirements-dev.txt" 2>/dev/null | sha256sum | cut -c1-16)"
if [[ ! -f "$venv/.gatehouse-stamp" || "$(cat "$venv/.gatehouse-stamp")" != "$stamp" ]]; then
  echo "making the venv $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  # The SDK's test-only mocks (aioresponses, pytest-httpserver) are left out: the tests that need them mock
  # Permit's servers and do not call ours.
  "$venv/bin/pip" install --quiet --retries 0 -r "$src/requirements.txt" pytest pytest-asyncio pytest-mock >&2
  echo "$stamp" > "$venv/.gatehouse-stamp"
fi
# test_rbac_e2e.py imports pytest_httpserver, which the local wheel index lacks: Debian's
# (apt-get install python3-pytest-httpserver) is put on the SDK tests' path with the werkzeug and markupsafe it is
# built for (made anew each run: links only).
test_path="$venv/debian-test-deps"
debian=/usr/lib/python3/dist-packages
rm -rf "$test_path"
if [[ -d "$debian/pytest_httpserver" ]]; then
  mkdir -p "$test_path"
  for dep in pytest_httpserver pytest_httpserver-*.dist-info werkzeug markupsafe; do
    for found in "$debian"/$dep; do ln -s "$found" "$test_path/"; done
  done
fi

free_port() {
  "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

server_pid=""
work=""
log=""
schema=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ -n "$schema" ]]; then
    psql "$pg_url" -q -c "drop schema if exists \"$schema\" cascade" >/dev/null 2>&1 || true
  fi
  if [[ -n "$work" ]]; then
    cp "$work/server.log" "$log" 2>/dev/null || true
    rm -rf "$work"
  fi
  server_pid="" work="" schema=""
}
trap cleanup EXIT

status=0
for database in $databases; do
  work="$(mktemp -d -t gatehouse-pysdk-XXXXXX)"
  log="${TMPDIR:-/tmp}/gatehouse-pysdk-$database.log"
  api_port="$(free_port)"
  pdp_port="$(free_port)"
  admin_key="pysdk_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  env_vars=(
    GATEHOUSE_API_PORT="$api_port" GATEHOUSE_PDP_PORT="$pdp_port" GATEHOUSE_OPA_PORT=0
    GATEHOUSE_DATA_DIR="$work/data" GATEHOUSE_BOOTSTRAP_API_KEY="$admin_key" GATEHOUSE_LOG_LEVEL=warn
    GATEHOUSE_RATE_LIMIT_PER_MINUTE=100000
  )
  if [[ "$database" == postgres ]]; then
    schema="pysdk_$$_$RANDOM"
    # The server uses the schema that search_path names; it must exist.
    psql "$pg_url" -q -c "create schema \"$schema\"" >/dev/null
    env_vars+=(DATABASE_URL="$pg_url?options=-c%20search_path%3D$schema")
  fi
  env "${env_vars[@]}" node "$repo/bin/gatehouse.js" serve > "$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$api_port/readyz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "gatehouse serve exited:" >&2
      cat "$work/server.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "== Permit's Python SDK ($(cd "$src" && git describe --tags 2>/dev/null || basename "$src")) on $database: API :$api_port, PDP :$pdp_port"
  if ! PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$src" PERMIT_PYTHON_SRC="$src" PYSDK_TEST_PATH="$test_path" GATEHOUSE_API_URL="http://127.0.0.1:$api_port" \
    GATEHOUSE_PDP_URL="http://127.0.0.1:$pdp_port" GATEHOUSE_ADMIN_KEY="$admin_key" \
    "$venv/bin/python" "$repo/scripts/permit-python-sdk/flows.py"; then
    status=1
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "gatehouse serve had exited (see $log)"
    status=1
  fi
  cleanup
  echo "server log: $log"
done
exit "$status"
