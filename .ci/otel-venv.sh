#!/usr/bin/env bash
# Create (once) the Python venv with the OpenTelemetry SDK and its OTLP/HTTP exporter that
# tests/otel/fake_agent.py needs. Idempotent: an existing venv with both packages is reused.
#
#   bash .ci/otel-venv.sh            # venv at ${OTEL_VENV:-/tmp/otelvenv}; prints its python
set -euo pipefail
venv="${OTEL_VENV:-/tmp/otelvenv}"
if ! "$venv/bin/python" -c 'import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http' >/dev/null 2>&1; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2
fi
echo "$venv/bin/python"
