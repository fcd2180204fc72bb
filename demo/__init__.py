"""``mast-otel demo``: a simulated SRE agent fleet diagnosed live by an in-process processor."""
