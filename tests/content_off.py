"""A recorded run as it would read with content capture off, for tests that compare the two verdicts.

Applied to a run as loaded (normalized, hints not yet derived): every content field goes, and so does
what a normalizer read from content (a tool's error found in its returned value, the model's requested
tool names read from its output messages, the run's answer and request). What stays is what
instrumentations write with capture off: span names, parents, times, status and exception events,
token counts, budgets.
"""

from __future__ import annotations

from mast_otel.processors.model import Run

_CONTENT = ("input_text", "output_text", "tool_args", "tool_result", "tool_exchanges")


def without_content(run: Run) -> Run:
    """``run`` with its content taken out, in place (load a fresh copy for the content verdict)."""
    for span in run.spans:
        for name in _CONTENT:
            setattr(span, name, None)
        span.requested_tools = ()
        if span.error_type == "returned_error":  # read from the value the tool returned
            span.error, span.error_type = False, None
        if span.derived:
            span.derived.pop("error", None)
        if span.hints is not None:
            span.hints.final_answer = span.hints.task = None
    run.forget_views()
    return run
