#!/usr/bin/env bash
# Interface check with an independent client: build ctxgraph, start `ctxgraph serve` on a free
# port in a temporary data directory, and drive its MCP tools with the official Python MCP SDK
# (tests/python/mcp_client.py) over streamable HTTP and stdio, export a fake agent run to it with
# the OpenTelemetry Python SDK (tests/otel/fake_agent.py) and check the projected causal chain;
# then stop the server with SIGTERM and require a clean exit. Run by .ci/run; runs alone too.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(bash .ci/python-venv.sh "${MCP_VENV:-/tmp/mcpvenv}" mcp==2.3.0=mcp)
cargo build -p ctxgraph-cli --locked
bin="${CARGO_TARGET_DIR:-target}/debug/ctxgraph"

data=$(mktemp -d)
out="$data/serve.out"
server=""
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill "$server"; fi
  rm -rf "$data"
}
trap cleanup EXIT

key=$("$bin" principal add agent --tenant ci --role writer --role admin --data "$data/d")
"$bin" serve --data "$data/d" --addr 127.0.0.1:0 >"$out" &
server=$!
for _ in $(seq 100); do
  [ -s "$out" ] && break
  sleep 0.1
done
url=$(head -1 "$out" | sed 's/^listening on //')
[ -n "$url" ] || { echo "the server printed no address" >&2; exit 1; }
curl -fsS "$url/readyz" >/dev/null

"$python" tests/python/mcp_client.py --url "$url/mcp" --key "$key" \
  --binary "$bin" --data "$data/d" --principal agent

# The OpenTelemetry Python SDK exports a fake agent run to the running server; the run must come
# back as the session's causal chain over the HTTP API.
otel_python=$(bash .ci/otel-venv.sh)
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="$url/v1/traces" \
  OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer%20$key" \
  "$otel_python" tests/otel/fake_agent.py
curl -fsS "$url/v1/sessions/conv-weather-0001/timeline" -H "Authorization: Bearer $key" >"$data/timeline.json"
"$otel_python" - "$data/timeline.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["events"]
types = [e["event"]["properties"]["event_type"] for e in events]
assert types == ["agent.invoke", "llm.chat", "tool.execute", "tool.execute", "llm.chat"], types
root = events[0]["event"]["id"]
assert all(e["caused_by"] == [root] for e in events[1:]), events
failed, retry = events[2]["event"]["properties"], events[3]["event"]["properties"]
assert (failed["status"], retry["status"]) == ("failed", "completed"), (failed, retry)
print("otel: 5 spans exported by the SDK to ctxgraph serve, 5 events in a causal chain")
PY

kill -TERM "$server"
wait "$server"
server=""
echo "interfaces: ok"
