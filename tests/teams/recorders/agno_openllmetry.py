"""agno team (see ``agno_team``) through OpenLLMetry (opentelemetry-instrumentation-agno, with
opentelemetry-instrumentation-openai for the model calls agno makes through the OpenAI client).

Content off: ``TRACELOOP_TRACE_CONTENT=false``.
"""

import os

from tests.teams.harness.recording import arguments, tracer_provider
from tests.teams.recorders.agno_team import record


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()

    from opentelemetry.instrumentation.agno import AgnoInstrumentor
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    AgnoInstrumentor().instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    record(instrumentation="opentelemetry-instrumentation-agno + opentelemetry-instrumentation-openai (OpenLLMetry)",
           packages=["opentelemetry-instrumentation-agno", "opentelemetry-instrumentation-openai", "openai",
                     "opentelemetry-sdk"],
           exporter=exporter, provider=provider, args=args,
           notes="see tests/teams/recorders/agno_team.py and agno_openllmetry.py")


if __name__ == "__main__":
    main()
