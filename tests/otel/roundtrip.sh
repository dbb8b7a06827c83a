#!/usr/bin/env bash
# The OpenTelemetry Python SDK, as installed today, against `ctxgraph import otlp`: run the fake
# agent, capture its OTLP/HTTP export (protobuf, and the OTLP/JSON equivalent), import both into a
# fresh store and check the run's five spans are the session's five events, the tool's retry
# caused by the agent span.
#
#   bash tests/otel/roundtrip.sh [CTXGRAPH_BINARY]     # default: target/debug/ctxgraph
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$root/target}/debug/ctxgraph}"
python="$(bash "$root/.ci/otel-venv.sh")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A free loopback port, then the capture receiver on it.
port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$python" "$root/tests/otel/capture.py" "$work/run" "$port" &
receiver=$!
for _ in $(seq 50); do
  "$python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.1)" 2>/dev/null && break
  sleep 0.1
done
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:$port/v1/traces" "$python" "$root/tests/otel/fake_agent.py"
wait "$receiver"

db="$work/g.ctxg"
"$bin" --db "$db" --json import otlp "$work/run.pb" --no-enrich >"$work/pb.json"
"$bin" --db "$db" --json import otlp "$work/run.json" --no-enrich >"$work/json.json"
"$bin" --db "$db" --json session conv-weather-0001 >"$work/session.json"
"$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
pb, js, session = (json.load(open(f"{work}/{n}.json")) for n in ("pb", "json", "session"))
assert (pb["accepted"], pb["rejected"]) == (5, 0), pb
assert (js["accepted"], js["duplicates"]) == (0, 5), js
events = session["events"]
types = [e["event"]["properties"]["event_type"] for e in events]
assert types == ["agent.invoke", "llm.chat", "tool.execute", "tool.execute", "llm.chat"], types
root = events[0]["event"]["id"]
assert all(e["caused_by"] == [root] for e in events[1:]), events
failed, retry = events[2]["event"]["properties"], events[3]["event"]["properties"]
assert (failed["status"], retry["status"]) == ("failed", "completed")
assert retry["payload"]["retry_of"] == failed["event_id"]
print("otel roundtrip: 5 spans from the SDK, 5 events, causal chain and retry as expected")
PY
