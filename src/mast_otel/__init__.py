"""mast-otel: live MAST failure-mode diagnosis of LLM agent traces.

Subpackages:

- ``mast_otel.instrumentation``: agent-side spans (light; no FastAPI, no litellm import).
- ``mast_otel.processors``: the processor service, detection, judge, store, API and CLI.
- ``mast_otel.wire``: the span vocabulary both sides share (attribute names, hashing, claims).
- ``mast_otel.demo``: ``mast-otel demo``, a simulated cluster and SRE agents with scripted models.
"""

__version__ = "0.1.0"
