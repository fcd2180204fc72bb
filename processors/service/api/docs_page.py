"""``/docs``: Swagger UI served from this processor, so it works on networks without internet.

FastAPI's default page loads Swagger UI from a CDN and stays blank offline. The assets come
from the pinned ``fastapi-offline`` package (Swagger UI 5, which reads the OpenAPI 3.1 schema
FastAPI writes) and are served from ``/docs/assets/``. The page and ``/openapi.json`` ask for
the API token like the API they describe (a browser logged in to the web view sends its
session cookie); the assets are Swagger UI's own files and stay open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from fastapi import Depends, FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon.png": "image/png"}


def assets_folder() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


OPENAPI_URL = "/openapi.json"


def mount_api_docs(app: FastAPI, title: str, require_token: Callable[..., None]) -> None:
    """``/docs``, ``/openapi.json`` (both behind ``require_token``, a dependency) and the assets on
    ``app`` (created with ``docs_url=None, openapi_url=None``)."""
    folder = assets_folder()
    guarded = [Depends(require_token)]

    @app.get(OPENAPI_URL, include_in_schema=False, dependencies=guarded)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=guarded)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=OPENAPI_URL, title=f"{title} · API",
                                   swagger_js_url="/docs/assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs/assets/swagger-ui.css",
                                   swagger_favicon_url="/docs/assets/favicon.png")

    @app.get("/docs/assets/{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(status_code=404, detail=f"no asset {name!r}")
        return FileResponse(folder / name, media_type=ASSETS[name], headers={"Cache-Control": "max-age=86400"})
