"""opentelemetry-instrumentation-openai-v2 on the latest GenAI conventions (opentelemetry-util-genai).

``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` switches the instrumentation to its
``opentelemetry-util-genai`` path; ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` then says
where content goes: ``SPAN_ONLY`` (``gen_ai.input.messages`` / ``gen_ai.output.messages`` on the
model-call span), ``EVENT_ONLY`` (one ``gen_ai.client.inference.operation.details`` log record per
call carrying them), ``SPAN_AND_EVENT`` (both), ``NO_CONTENT`` (neither; no record either).
The agent is the hand-written loop of :mod:`openai_v2_agent`.
"""

import os

from tests.frameworks.harness.recording import arguments, logger_provider, record_all, tracer_provider
from tests.frameworks.harness.scenarios import INSTRUCTIONS, LIMIT, TASK

SWITCH = {"off": "NO_CONTENT", "spans": "SPAN_ONLY", "events": "EVENT_ONLY", "both": "SPAN_AND_EVENT"}
SCENARIOS = ("clean", "loop", "tool_error")
CONTENT_MODES = tuple(SWITCH)


def main() -> None:
    args = arguments()
    switches = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": SWITCH[args.content]}
    os.environ.update(switches)  # read when the instrumentor and the handler are made
    provider, exporter = tracer_provider()
    logs = logger_provider()

    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.util.genai.handler import TelemetryHandler

    from tests.frameworks.recorders.openai_v2_agent import run_agent

    OpenAIInstrumentor().instrument()
    handler = TelemetryHandler()

    def run(scenario, stub, cluster):
        client = OpenAI(base_url=stub.base_url, api_key="x")
        return run_agent(client, handler, TASK, INSTRUCTIONS, cluster.tools(), LIMIT)

    record_all(
        framework="openai-v2-genai",
        instrumentation="opentelemetry-instrumentation-openai-v2, latest experimental GenAI conventions "
                        "(opentelemetry-util-genai)",
        packages=["opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "openai",
                  "opentelemetry-sdk", "opentelemetry-api"],
        run=run, exporter=exporter, provider=provider, args=args, logs=logs, switches=switches,
        scenarios=SCENARIOS,
        notes=("No framework: a hand-written tool loop over openai.OpenAI().chat.completions.create (non-streaming), "
               "the agent and tool spans made with opentelemetry-util-genai's TelemetryHandler "
               "(invoke_local_agent, tool), tool arguments/results handed to a tool invocation only when its "
               "should_capture_content_on_span says so (util-genai 1.1b0 sends no tool content to log records). "
               f"The loop stops itself after {LIMIT} model calls. Scenarios kept to {', '.join(SCENARIOS)}."),
    )


if __name__ == "__main__":
    main()
