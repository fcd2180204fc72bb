"""What a tool call says: its kind read from its name (:mod:`.kinds`) and its arguments and
results read whatever envelope a framework wraps them in (:mod:`.values`), each text read once
while a request's decoding or a run's diagnosis holds a memo (:mod:`.content_memo`).

Shared by the team model, hint derivation, the normalizers and the detectors, so it imports
none of them.
"""
