"""A small fake agent run traced with the OpenTelemetry Python SDK (GenAI semantic conventions).

    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces python fake_agent.py

One trace: an `invoke_agent` root span; a `chat` span that asks for a tool; an `execute_tool`
span that fails (ERROR status, exception event); a retried `execute_tool` that succeeds (linked
to the failed attempt); a final `chat`. Exported over OTLP/HTTP protobuf in one request, to the
endpoint in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. No model is called: the answers are fixed.
"""

import time

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

CONVERSATION = "conv-weather-0001"
MODEL = "fake-model-1"


class UpstreamTimeout(Exception):
    pass


def chat(tracer, prompt, finish_reason, input_tokens, output_tokens):
    with tracer.start_as_current_span(f"chat {MODEL}", kind=SpanKind.CLIENT) as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.provider.name", "fake")
        span.set_attribute("gen_ai.conversation.id", CONVERSATION)
        span.set_attribute("gen_ai.request.model", MODEL)
        span.set_attribute("gen_ai.request.temperature", 0.2)
        span.set_attribute("gen_ai.response.model", MODEL)
        span.set_attribute("gen_ai.response.finish_reasons", [finish_reason])
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        span.set_attribute("prompt", prompt)
        time.sleep(0.01)
        span.set_status(Status(StatusCode.OK))


def execute_tool(tracer, call_id, attempt, fail, links=()):
    """One tool call; the span carries the error when the call fails."""
    with tracer.start_as_current_span(
        "execute_tool get_weather", kind=SpanKind.INTERNAL, links=list(links),
        record_exception=False, set_status_on_exception=False,
    ) as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", "get_weather")
        span.set_attribute("gen_ai.tool.type", "function")
        span.set_attribute("gen_ai.tool.call.id", call_id)
        span.set_attribute("gen_ai.tool.call.arguments", '{"city": "Lisbon"}')
        span.set_attribute("attempt", attempt)
        time.sleep(0.005)
        if fail:
            error = UpstreamTimeout("weather service timed out after 5 s")
            span.record_exception(error)
            span.set_attribute("error.type", "UpstreamTimeout")
            span.set_status(Status(StatusCode.ERROR, str(error)))
        else:
            span.set_attribute("gen_ai.tool.call.result", '{"temperature_c": 21, "sky": "clear"}')
            span.set_status(Status(StatusCode.OK))
        return span.get_span_context()


def main():
    resource = Resource.create({
        "service.name": "fake-agent-service",
        "service.version": "0.1.0",
        "deployment.environment.name": "test",
    })
    provider = TracerProvider(resource=resource)
    # One batch, flushed at shutdown: the whole run is one export request.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=60_000))
    tracer = provider.get_tracer("ctxgraph.fake_agent", "0.1.0")

    with tracer.start_as_current_span("invoke_agent Weather Agent", kind=SpanKind.INTERNAL) as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.provider.name", "fake")
        root.set_attribute("gen_ai.agent.name", "Weather Agent")
        root.set_attribute("gen_ai.agent.id", "agent-weather-1")
        root.set_attribute("gen_ai.conversation.id", CONVERSATION)
        root.set_attribute("user.id", "user-0007")
        chat(tracer, "What is the weather in Lisbon?", "tool_calls", 42, 17)
        failed = execute_tool(tracer, "call-1", 1, fail=True)
        execute_tool(tracer, "call-2", 2, fail=False,
                     links=[Link(failed, {"ctxgraph.link.type": "retry_of"})])
        chat(tracer, "Tool result: 21 C and clear.", "stop", 88, 24)
        root.set_status(Status(StatusCode.OK))

    provider.shutdown()


if __name__ == "__main__":
    main()
