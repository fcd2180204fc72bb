"""Optional bearer-token authentication, shared by the HTTP routes and the gRPC receiver.

Ingest (``/v1/traces``, gRPC Export) and the API (``/v1/diagnoses``, ``/v1/outcomes``, extra
routers) have separate tokens, so an agent's exporter credentials cannot read diagnoses.
Tokens are compared in constant time and never logged.
"""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request
from pydantic import SecretStr

_PREFIX = "bearer "


def authorized(header_value: str | None, token: SecretStr | None) -> bool:
    """Whether an ``Authorization`` header value carries ``token`` (always true without a token)."""
    if token is None:
        return True
    if not header_value or header_value[: len(_PREFIX)].lower() != _PREFIX:
        return False
    presented = header_value[len(_PREFIX):].strip().encode("utf-8", "surrogateescape")
    return hmac.compare_digest(presented, token.get_secret_value().encode("utf-8"))


def bearer_dependency(token: SecretStr | None):
    """A FastAPI dependency answering 401 unless the request carries ``token``."""

    def require_token(request: Request) -> None:
        if not authorized(request.headers.get("authorization"), token):
            raise HTTPException(status_code=401, detail="missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})

    return require_token
