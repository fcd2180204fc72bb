"""Optional bearer-token authentication, shared by the HTTP routes and the gRPC receiver.

Ingest (``/v1/traces``, gRPC Export) and the API (``/v1/diagnoses``, ``/v1/outcomes``, extra
routers) have separate tokens, so an agent's exporter credentials cannot read diagnoses.
Tokens are compared in constant time and never logged. A browser logs in once with the API
token (the web view's login form) and gets a session cookie instead: an expiry time signed
with a key derived from the token, so changing the token ends every session and replicas
sharing a token accept each other's cookies. Wrong credentials are counted per client address
(``auth_throttle.py``): past a few, the address is refused for a while.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from fastapi import HTTPException, Request
from pydantic import SecretStr

from mast_otel.processors.service.auth_throttle import AuthThrottle, Denied

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


def session_value(token: SecretStr, expires_at: int) -> str:
    """A session cookie's value: its expiry (Unix seconds) and the expiry's signature."""
    signature = hmac.new(_session_key(token), str(expires_at).encode(), hashlib.sha256).hexdigest()
    return f"{expires_at}.{signature}"


def session_valid(value: str | None, token: SecretStr | None, now: float | None = None) -> bool:
    """Whether ``value`` is an unexpired session cookie signed for ``token``."""
    if token is None:
        return True
    expires, _, _signature = (value or "").partition(".")
    if not (expires.isascii() and expires.isdigit()) or len(expires) > _EXPIRY_DIGITS:
        return False  # not a time this processor wrote (int() refuses past 4,300 digits)
    if int(expires) <= (time.time() if now is None else now):
        return False
    return hmac.compare_digest(session_value(token, int(expires)).encode(), (value or "").encode())


def request_authorized(request: Request, token: SecretStr | None) -> bool:
    """A bearer token or a valid session cookie (always true without a token)."""
    return authorized(request.headers.get("authorization"), token) or session_valid(request.cookies.get(SESSION_COOKIE), token)


def client_address(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


def check_request(request: Request, token: SecretStr | None, throttle: AuthThrottle) -> Denied | None:
    """``None`` when the request may go on (a token or session cookie, or no token set); else why not,
    counting a wrong credential against the client's address."""
    if token is None:
        return None
    presented = "authorization" in request.headers or SESSION_COOKIE in request.cookies
    return throttle.judge(client_address(request), request.url.path, request_authorized(request, token), presented)


def bearer_dependency(token: SecretStr | None, throttle: AuthThrottle):
    """A FastAPI dependency answering 401 unless the request carries ``token`` (or a session
    cookie from the web view's login), 429 while its address is throttled."""

    def require_token(request: Request) -> None:
        denied = check_request(request, token, throttle)
        if denied is not None:
            raise HTTPException(status_code=denied.status, detail=denied.message, headers=denied.headers)

    return require_token
