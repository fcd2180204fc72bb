"""agno team (see ``agno_team``) through OpenInference (openinference-instrumentation-agno).

Tracing as its README shows: ``AgnoInstrumentor().instrument(tracer_provider=...)``; the
instrumentor writes the model calls itself. Content off: ``OPENINFERENCE_HIDE_INPUTS`` /
``OPENINFERENCE_HIDE_OUTPUTS``.
"""

import os

from tests.teams.harness.recording import arguments, tracer_provider
from tests.teams.recorders.agno_team import record


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.agno import AgnoInstrumentor

    AgnoInstrumentor().instrument(tracer_provider=provider)
    record(instrumentation="openinference-instrumentation-agno (AgnoInstrumentor)",
           packages=["openinference-instrumentation-agno", "openai", "opentelemetry-sdk"],
           exporter=exporter, provider=provider, args=args,
           notes="see tests/teams/recorders/agno_team.py and agno_openinference.py")


if __name__ == "__main__":
    main()
