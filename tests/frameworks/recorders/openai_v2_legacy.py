"""opentelemetry-instrumentation-openai-v2 on its default conventions (GenAI semconv v1.30).

Without ``OTEL_SEMCONV_STABILITY_OPT_IN`` the instrumentation stays on its legacy path: spans
carry no content whatever the switch says, and each model call sends one log record per input
message (``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message``) and one per choice (``gen_ai.choice``). With
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` the records' bodies hold the content
(texts, tool-call arguments); with ``false`` (the default) the records are still sent, holding
only roles, tool-call ids and names, and finish reasons. So this path has two modes: ``off`` and
``events``. The agent is the hand-written loop of :mod:`openai_v2_agent`. The legacy path needs
``opentelemetry-util-genai`` before 1.0: from 1.0 on its ``is_experimental_mode`` always answers
true, and openai-v2 2.4b0 takes the util-genai path whatever the opt-in says.
"""

import os

from tests.frameworks.harness.recording import arguments, logger_provider, record_all, tracer_provider
from tests.frameworks.harness.scenarios import INSTRUCTIONS, LIMIT, TASK

SWITCH = {"off": "false", "events": "true"}  # the legacy switch: a boolean
LACKING = {"spans": "the v1.30 path never puts content on spans: 'true' sends it in log records only",
           "both": "the v1.30 path never puts content on spans: 'true' sends it in log records only"}
SCENARIOS = ("clean", "loop", "tool_error")
CONTENT_MODES = tuple(SWITCH)


def main() -> None:
    args = arguments()
    if args.content not in SWITCH:
        raise SystemExit(f"openai-v2 legacy conventions have no content mode {args.content!r}: {LACKING[args.content]}")
    switches = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": SWITCH[args.content]}
    os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)  # the default conventions
    os.environ.update(switches)
    provider, exporter = tracer_provider()
    logs = logger_provider()

    from openai import OpenAI
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from tests.frameworks.recorders.openai_v2_agent import PlainSpans, run_agent

    OpenAIInstrumentor().instrument()
    handler = PlainSpans()

    def run(scenario, stub, cluster):
        client = OpenAI(base_url=stub.base_url, api_key="x")
        return run_agent(client, handler, TASK, INSTRUCTIONS, cluster.tools(), LIMIT)

    record_all(
        framework="openai-v2-legacy",
        instrumentation="opentelemetry-instrumentation-openai-v2, default conventions (GenAI semconv v1.30, "
                        "per-message log records)",
        packages=["opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai", "openai",
                  "opentelemetry-sdk", "opentelemetry-api"],
        run=run, exporter=exporter, provider=provider, args=args, logs=logs, switches=switches,
        modes_lacking=LACKING, scenarios=SCENARIOS,
        notes=("No framework: the same hand-written tool loop as openai-v2-genai; its agent and tool spans written "
               "with the OpenTelemetry API (invoke_agent / execute_tool, no content: opentelemetry-util-genai 0.4b0, "
               "the newest that leaves openai-v2 on its default conventions, has no agent or tool helper of this "
               "shape; from 1.0 on, openai-v2 2.4b0 takes the util-genai path whatever the opt-in says). The loop stops itself after {LIMIT} model calls. Scenarios kept to {', '.join(SCENARIOS)}."),
    )


if __name__ == "__main__":
    main()
