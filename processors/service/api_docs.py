"""``/docs``: Swagger UI served from this processor, so it works on networks without internet.

FastAPI's default page loads Swagger UI from a CDN and stays blank offline. The assets come
from the pinned ``fastapi-offline`` package (Swagger UI 5, which reads the OpenAPI 3.1 schema
FastAPI writes) and are served from ``/docs/assets/``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css", "favicon.png": "image/png"}


def assets_folder() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def mount_api_docs(app: FastAPI, title: str) -> None:
    """``/docs`` and its assets on ``app`` (created with ``docs_url=None``)."""
    folder = assets_folder()

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{title} · API",
                                   swagger_js_url="/docs/assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs/assets/swagger-ui.css",
                                   swagger_favicon_url="/docs/assets/favicon.png")

    @app.get("/docs/assets/{name}", include_in_schema=False)
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(status_code=404, detail=f"no asset {name!r}")
        return FileResponse(folder / name, media_type=ASSETS[name], headers={"Cache-Control": "max-age=86400"})
