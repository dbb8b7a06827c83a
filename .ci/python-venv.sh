#!/usr/bin/env bash
# Create (once) a Python venv holding the given PyPI packages, for the interface checks that
# drive a running server with an official client. Idempotent: a venv that imports every module
# is reused.
#
#   bash .ci/python-venv.sh VENV_DIR PACKAGE=MODULE...   # prints the venv's python
#   bash .ci/python-venv.sh /tmp/v rdflib==7.6.0=rdflib   # a pinned version
#   bash .ci/python-venv.sh /tmp/mcpvenv mcp=mcp
set -euo pipefail
venv="$1"
shift
modules=()
packages=()
for spec in "$@"; do
  packages+=("${spec%=*}")   # PACKAGE may pin a version: name==1.2.3
  modules+=("${spec##*=}")
done
check="import $(IFS=,; echo "${modules[*]}")"
if ! "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${packages[@]}"
fi
echo "$venv/bin/python"
