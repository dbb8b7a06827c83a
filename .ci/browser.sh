#!/usr/bin/env bash
# The web explorer in a real browser: install Debian's chromium and chromium-driver, build
# ctxgraph, make the demo store with one event only the operator role may see, start
# `ctxgraph serve` over it (an admin and a restricted reader) and `ctxgraph ui` on the same
# store (the owner), each on a free 127.0.0.1 port, and drive every view with Selenium
# (tests/browser/explorer_check.py). Screenshots go to target/explorer-screenshots/.
# Run by .ci/run; runs alone too (as root, or with chromium installed).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium chromium-driver >/dev/null
fi
python=$(bash .ci/python-venv.sh "${BROWSER_VENV:-/tmp/browservenv}" selenium==4.51.0=selenium)
cargo build -p ctxgraph-cli --locked
bin="${CARGO_TARGET_DIR:-target}/debug/ctxgraph"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then kill "$pid"; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

store="$work/data/tenants/default.ctxg"
mkdir -p "$work/data/tenants"
"$bin" --db "$store" demo >/dev/null
# One failed event of the failing session that only the operator role may see.
hidden_id=evt-hidden-0001
hidden_text=QX7-vault-credential-leak
cat >"$work/hidden.jsonl" <<JSON
{"event_id":"$hidden_id","event_type":"tool.execute","occurred_at":"2026-11-16T08:00:56Z","session_id":"sess-0003","agent_id":"data-agent","trace_id":"trace-0003","tool_name":"vault_read","status":"failed","parent_event_id":"evt-000032","payload":{"error":"vault-proxy refused the deploy token $hidden_text"},"scope":{"allow_roles":["operator"]}}
JSON
"$bin" --db "$store" ingest "$work/hidden.jsonl" >/dev/null

admin=$("$bin" principal add explorer-admin --tenant default --role admin --data "$work/data")
reader=$("$bin" principal add explorer-reader --tenant default --role visitor --data "$work/data")

started() { # FILE: wait for the server's first line and print it
  for _ in $(seq 300); do
    [ -s "$1" ] && { head -1 "$1"; return; }
    sleep 0.1
  done
  echo "no address in $1" >&2
  exit 1
}
"$bin" serve --data "$work/data" --addr 127.0.0.1:0 >"$work/serve.out" &
pids+=($!)
url=$(started "$work/serve.out" | sed 's/^listening on //')
"$bin" --db "$store" ui >"$work/ui.out" &
pids+=($!)
owner_url=$(started "$work/ui.out" | sed 's/^explorer at //')

mkdir -p target/explorer-screenshots
"$python" tests/browser/explorer_check.py --url "$url" --admin-key "$admin" --reader-key "$reader" \
  --owner-url "$owner_url" --hidden-id "$hidden_id" --hidden-text "$hidden_text" \
  --hidden-question "vault-proxy refused the deploy token" --out target/explorer-screenshots
