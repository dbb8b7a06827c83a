#!/usr/bin/env bash
# Keep the fuzz targets compiling and, when cargo-fuzz is installed, fuzz each one briefly.
#
#   bash fuzz/run.sh                  # build; then fuzz each target ${FUZZ_SECONDS:-30} s
#   FUZZ_SECONDS=0 bash fuzz/run.sh   # build only
#
# Exits non-zero if the build fails or any target finds a crash (artifacts in fuzz/artifacts/).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"

targets=(record_json receipt_json schema_extension conversation_jsonl locomo_json checklist_file document_split otlp_request http_batch mcp_arguments tool_imports)
seconds="${FUZZ_SECONDS:-30}"

# 1. Always: a plain stable build (libfuzzer-sys compiles libFuzzer's C++ with cc).
cargo build --manifest-path fuzz/Cargo.toml --bins

if [[ "$seconds" == 0 ]]; then
    echo "fuzz: FUZZ_SECONDS=0, build only"
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: cargo-fuzz not installed (cargo install cargo-fuzz --locked), build only"
    exit 0
fi

# 2. Fuzz. The toolchain is stable: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags
# (AddressSanitizer, sancov). New inputs go to fuzz/corpus/<target> (git-ignored, listed first so
# libFuzzer writes there); fuzz/seeds/<target> is read only.
passed=0
failed=0
failures=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "fuzz: $t for ${seconds}s"
    if RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" \
        -- -max_total_time="$seconds" -print_final_stats=1; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$t")
    fi
done

echo "fuzz: $passed passed, $failed failed"
if ((failed > 0)); then
    echo "fuzz: crashing targets: ${failures[*]} (inputs in fuzz/artifacts/<target>/)" >&2
    exit 1
fi
