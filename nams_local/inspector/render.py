"""HTML out: the Jinja2 environment (templates shipped in the package) and the headers.

Autoescaping is on for every template, so stored text (user input: messages, entity names,
tool outputs) is always shown as text. The Content-Security-Policy forbids every script
and any origin but this one as a second wall: even a template mistake could not run an
injected ``<script>`` nor load anything from a CDN.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.responses import HTMLResponse

__all__ = ["SECURITY_HEADERS", "page"]

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return value


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


_env = Environment(
    loader=PackageLoader("nams_local.inspector", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["when"] = _when
_env.filters["score"] = _score


def page(
    template: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    """Render ``template`` with ``context`` as a complete HTML response."""
    html = _env.get_template(template).render(**context)
    return HTMLResponse(
        html, status_code=status_code, headers={**SECURITY_HEADERS, **(headers or {})}
    )
