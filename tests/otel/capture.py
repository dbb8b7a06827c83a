"""A tiny OTLP/HTTP traces receiver that saves what an exporter sends, for test fixtures.

    python capture.py OUT_STEM [PORT]

Listens on 127.0.0.1:PORT (default 4318), answers every `POST /v1/traces` with an empty
ExportTraceServiceResponse, and writes the body of the first request as OUT_STEM.pb plus its
OTLP/JSON encoding as OUT_STEM.json (hex trace and span ids, lowerCamelCase field names, 64-bit
integers as strings, enums as integers). Exits after that first request.
"""

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def hex_ids(node):
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping writes bytes as base64."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids(item)


def to_otlp_json(body: bytes) -> str:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    tree = MessageToDict(request, use_integers_for_enums=True)
    hex_ids(tree)
    return json.dumps(tree, indent=2, sort_keys=True) + "\n"


class Handler(BaseHTTPRequestHandler):
    stem = "capture"
    done = False

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        with open(f"{self.stem}.pb", "wb") as f:
            f.write(body)
        with open(f"{self.stem}.json", "w", encoding="utf-8") as f:
            f.write(to_otlp_json(body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
        Handler.done = True

    def log_message(self, fmt, *args):
        sys.stderr.write("capture: " + (fmt % args) + "\n")


def main():
    Handler.stem = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 4318
    server = HTTPServer(("127.0.0.1", port), Handler)
    while not Handler.done:
        server.handle_request()


if __name__ == "__main__":
    main()
