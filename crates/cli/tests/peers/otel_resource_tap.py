"""A real OTLP receiver (PyPI `oteltap`, from scripts/otel-peers) that also reports each span's
resource: oteltap's own NDJSON leaves the resource out, so it re-emits every trace export
(unchanged, as protobuf) to a sink in this script, which prints one JSON line per span with the
resource's attributes. Both listen on 127.0.0.1 only.

Usage: python otel_resource_tap.py PORT   (runs until killed)
Prints: {"traceId": hex, "spanId": hex, "name": ..., "resource": {key: value}}
"""

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from oteltap.oteltap_http_protobuf_receiver import OtelTapHttpProtobufReceiver
from oteltap.oteltap_http_protobuf_receiver_settings import OtelTapHttpProtobufReceiverSettings


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    print(json.dumps({"traceId": span.trace_id.hex(), "spanId": span.span_id.hex(),
                                      "name": span.name, "resource": resource}), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


async def main():
    sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    settings = OtelTapHttpProtobufReceiverSettings(
        http_port=int(sys.argv[1]),
        reemit_traces_to_url=f"http://127.0.0.1:{sink.server_address[1]}/v1/traces",
    )
    async with OtelTapHttpProtobufReceiver(settings):
        await asyncio.Event().wait()


asyncio.run(main())
