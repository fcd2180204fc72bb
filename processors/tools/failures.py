"""When a tool's failure says the call itself was wrong: its arguments were refused.

A tool that refused its arguments (an unexpected or missing keyword, a value that fails the
tool's schema) refuses the same arguments again: unlike a timeout or a rate limit, sending the
same call once more cannot succeed. Read from the failure's type and message, as the
instrumentation recorded them (no content needed). Pure functions.
"""

from __future__ import annotations

import re

# Exception types that name a call's arguments as the fault (Python's, pydantic's, JSON Schema's, Zod's).
ARGUMENT_ERROR_TYPES = frozenset({"typeerror", "validationerror", "zoderror", "invalidargumentserror",
                                  "toolargumentserror", "invalidtoolargumentserror"})
# How a refusal of the arguments reads in a failure's message.
_ARGUMENT_WORDS = re.compile(
    r"unexpected keyword argument|missing \d* ?required (positional |keyword(-only)? )?argument|"
    r"takes \d+ positional arguments? but \d+ (were|was) given|got multiple values for argument|"
    r"invalid (tool )?arguments?\b|validation errors? for\b|does not match (the )?(input )?schema",
    re.IGNORECASE)


def refused_arguments(error_type: str | None, message: str | None) -> bool:
    """Whether a failure says the call's arguments were refused (so the same arguments fail again)."""
    if message and _ARGUMENT_WORDS.search(message):
        return True
    name = (error_type or "").rsplit(".", 1)[-1].lower()
    return name in ARGUMENT_ERROR_TYPES and "argument" in (message or "").lower()
