"""What the processor holds on behalf of its senders, and its bound: one memory account in bytes
that every holder (the assembler, the exporters' queues, the judge) reports to (``account``),
and the bytes of request bodies in flight, reserved per client address before they are decoded
(``admission``). ``assembly.max_buffered_bytes`` is the budget; past it ingest is refused with a
retry hint.
"""
