"""Optional bearer-token authentication, shared by the HTTP routes and the gRPC receiver.

Ingest (``/v1/traces``, gRPC Export) and the API (``/v1/diagnoses``, ``/v1/outcomes``, extra
routers) have separate tokens, so an agent's exporter credentials cannot read diagnoses.
Tokens are compared in constant time and never logged. A browser logs in once with the API
token (the web view's login form) and gets a session cookie instead: an expiry time and a
random session id signed with a key derived from the token, so changing the token ends every
session and replicas sharing a token accept each other's cookies. Logging out revokes the
cookie (:class:`RevokedSessions`: in the store, which every replica and a restart read), so a
copy replayed afterwards is refused. Wrong credentials are counted per client address
(``throttle.py``): past a few, the address is refused for a while.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

from fastapi import HTTPException, Request
from pydantic import SecretStr

from mast_otel.processors.service.auth.throttle import AuthThrottle, Denied
from mast_otel.processors.service.auth.logouts import RevokedSessions

_PREFIX = "bearer "


def authorized(header_value: str | None, token: SecretStr | None) -> bool:
    """Whether an ``Authorization`` header value carries ``token`` (always true without a token)."""
    if token is None:
        return True
    if not header_value or header_value[: len(_PREFIX)].lower() != _PREFIX:
        return False
    presented = header_value[len(_PREFIX):].strip().encode("utf-8", "surrogateescape")
    return hmac.compare_digest(presented, token.get_secret_value().encode("utf-8"))


SESSION_COOKIE = "mast_otel_session"
_EXPIRY_DIGITS = 12  # Unix seconds until the year 33658


def _session_key(token: SecretStr) -> bytes:
    return hmac.new(token.get_secret_value().encode("utf-8"), b"mast-otel web session", hashlib.sha256).digest()


def session_value(token: SecretStr, expires_at: int, session_id: str | None = None) -> str:
    """A session cookie's value: its expiry (Unix seconds), a random id (two logins in one
    second are two sessions, each revoked alone), and their signature."""
    session_id = secrets.token_hex(8) if session_id is None else session_id
    signed = f"{expires_at}.{session_id}"
    signature = hmac.new(_session_key(token), signed.encode(), hashlib.sha256).hexdigest()
    return f"{signed}.{signature}"


def session_expiry(value: str | None, token: SecretStr) -> int | None:
    """The expiry of ``value`` when it is a session cookie signed for ``token`` (expired or not)."""
    expires, _, rest = (value or "").partition(".")
    session_id, _, _signature = rest.partition(".")
    if not (expires.isascii() and expires.isdigit()) or len(expires) > _EXPIRY_DIGITS:
        return None  # not a time this processor wrote (int() refuses past 4,300 digits)
    if not (session_id.isascii() and session_id.isalnum()) or len(session_id) > 32:
        return None
    if not hmac.compare_digest(session_value(token, int(expires), session_id).encode(), (value or "").encode()):
        return None
    return int(expires)


def session_valid(value: str | None, token: SecretStr | None, now: float | None = None,
                  revoked: RevokedSessions | None = None) -> bool:
    """Whether ``value`` is an unexpired session cookie signed for ``token``, not logged out."""
    if token is None:
        return True
    expires = session_expiry(value, token)
    if expires is None or expires <= (time.time() if now is None else now):
        return False
    return revoked is None or value not in revoked


def request_authorized(request: Request, token: SecretStr | None, revoked: RevokedSessions | None = None) -> bool:
    """A bearer token or a valid session cookie, not logged out (always true without a token)."""
    return (authorized(request.headers.get("authorization"), token)
            or session_valid(request.cookies.get(SESSION_COOKIE), token, revoked=revoked))


def client_address(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


def check_request(request: Request, token: SecretStr | None, throttle: AuthThrottle) -> Denied | None:
    """``None`` when the request may go on (a token or session cookie, or no token set); else why not,
    counting a wrong credential against the client's address."""
    if token is None:
        return None
    presented = "authorization" in request.headers or SESSION_COOKIE in request.cookies
    valid = request_authorized(request, token, throttle.revoked_sessions)
    return throttle.judge(client_address(request), request.url.path, valid, presented)


def bearer_dependency(token: SecretStr | None, throttle: AuthThrottle):
    """A FastAPI dependency answering 401 unless the request carries ``token`` (or a session
    cookie from the web view's login), 429 while its address is throttled."""

    def require_token(request: Request) -> None:
        denied = check_request(request, token, throttle)
        if denied is not None:
            raise HTTPException(status_code=denied.status, detail=denied.message, headers=denied.headers)

    return require_token
