"""Conversations: the turns of one session (each turn its own trace) diagnosed together.

``ids`` reads a run's session id from whatever its instrumentation wrote, ``diagnose`` holds the
pure session-level detection (turns in, findings on the turns out) and ``settings`` its typed
thresholds. The service groups finished runs into sessions and calls ``diagnose_session``.
"""
