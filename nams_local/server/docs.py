"""``/docs`` (Swagger UI) and ``/redoc`` that work offline.

FastAPI's own pages load their JavaScript and CSS from a CDN, so on a CI runner or a laptop
without network the page stays blank. The assets here come from the ``fastapi-offline``
package (Swagger UI 5, ReDoc 2, MIT), installed from PyPI with nams-local, and are served by
this app under ``/docs/assets``; the pages name no external URL (no Google fonts either).
Like ``/openapi.json`` they need no token (A1).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS_URL", "install_docs"]

ASSETS_URL = "/docs/assets"


def _assets() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def install_docs(app: FastAPI) -> None:
    app.mount(ASSETS_URL, StaticFiles(directory=_assets()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_URL}/favicon.png",
            with_google_fonts=False,
        )
