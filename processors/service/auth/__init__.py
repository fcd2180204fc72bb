"""Who may send spans and read diagnoses: the bearer tokens of ingest and of the API, and the
signed cookie a browser gets by logging in to the web view (``tokens``); failed attempts slowed
per client address (``throttle``); web logins ended by logout before their cookie expires
(``logouts``). These are login sessions of the web view; an agent's sessions (conversations of
turns) are ``processors.conversations``, kept in ``store/conversations``.
"""
