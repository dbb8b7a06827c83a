#!/usr/bin/env bash
# Interface check with an independent client: build ctxgraph, start `ctxgraph serve` on a free
# port in a temporary data directory, and drive its MCP tools with the official Python MCP SDK
# (tests/python/mcp_client.py) over streamable HTTP and stdio; then stop the server with SIGTERM
# and require a clean exit. Run by .ci/run; runs alone too.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(bash .ci/python-venv.sh "${MCP_VENV:-/tmp/mcpvenv}" mcp=mcp)
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

key=$("$bin" principal add agent --tenant ci --role writer --data "$data/d")
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

kill -TERM "$server"
wait "$server"
server=""
echo "interfaces: ok"
