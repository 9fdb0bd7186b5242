"""Driving the inspector in process, as a browser without JavaScript would: log in, read
pages, post forms (with the CSRF token read back from the page)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

__all__ = ["Browserless", "csrf_of", "login"]

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_NONCE = re.compile(r'name="nonce" value="([^"]+)"')


def csrf_of(html: str) -> str:
    match = _CSRF.search(html)
    assert match, "no CSRF token on the page"
    return match.group(1)


@dataclass
class Browserless:
    http: httpx.AsyncClient
    csrf: str

    async def get(self, path: str) -> httpx.Response:
        return await self.http.get(f"/ui{path}")

    async def act(self, action: str, fields: dict[str, str], *, confirm: bool) -> httpx.Response:
        data = {"csrf": self.csrf, **fields}
        if confirm:
            data["confirm"] = "yes"
        return await self.http.post(f"/ui/actions/{action}", data=data)


async def login(http: httpx.AsyncClient, token: str, workspace: str = "") -> Browserless:
    """Log in through the form; the client keeps the session cookie."""
    form = await http.get("/ui/login")
    assert form.status_code == 200, form.text
    nonce = _NONCE.search(form.text)
    assert nonce
    done = await http.post(
        "/ui/login", data={"nonce": nonce.group(1), "token": token, "workspace": workspace}
    )
    assert done.status_code == 303, done.text
    home = await http.get("/ui/")
    assert home.status_code == 200 and "Log out" in home.text, home.text
    return Browserless(http, csrf_of(home.text))
