"""``open_backend()`` picks the backend from the environment; arguments override it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from backends.hosted import DEFAULT_ENDPOINT, HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local import config
from nams_local.backend import MemoryBackend
from nams_local.errors import AuthenticationError, InvalidInputError

ENV = ("NAMS_BACKEND", "MEMORY_API_KEY", "MEMORY_ENDPOINT", "MEMORY_WORKSPACE_ID", "NAMS_LOCAL_DB")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NAMS_LOCAL_DB", ":memory:")
    yield monkeypatch


async def opened(**overrides: object) -> MemoryBackend:
    """``open_backend(**overrides)``, closed again (only the choice is under test)."""
    backend = config.open_backend(**overrides)  # type: ignore[arg-type]
    await backend.aclose()
    return backend


async def test_nothing_set_means_local() -> None:
    backend = await opened()

    assert isinstance(backend, SQLiteBackend)
    assert backend.store.path == ":memory:"


async def test_local_path_from_env_or_argument(
    clean_env: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    clean_env.setenv("NAMS_LOCAL_DB", str(tmp_path / "env.db"))
    from_env = await opened()
    from_arg = await opened(path=tmp_path / "arg.db")

    assert isinstance(from_env, SQLiteBackend) and isinstance(from_arg, SQLiteBackend)
    assert from_env.store.path == str(tmp_path / "env.db")
    assert from_arg.store.path == str(tmp_path / "arg.db")


async def test_api_key_means_hosted(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMORY_API_KEY", "nams_key")
    clean_env.setenv("MEMORY_WORKSPACE_ID", "ws-9")

    backend = await opened()

    assert isinstance(backend, HostedBackend)
    assert backend.endpoint == DEFAULT_ENDPOINT == config.DEFAULT_ENDPOINT
    assert backend.workspace_id == "ws-9"


async def test_hosted_endpoint_from_env_and_overrides(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMORY_API_KEY", "nams_key")
    clean_env.setenv("MEMORY_ENDPOINT", "http://127.0.0.1:8765/v1/")

    from_env = await opened()
    overridden = await opened(endpoint="http://example.invalid/v1", workspace_id="w", timeout=5.0)

    assert isinstance(from_env, HostedBackend) and isinstance(overridden, HostedBackend)
    assert from_env.endpoint == "http://127.0.0.1:8765/v1"
    assert (overridden.endpoint, overridden.workspace_id) == ("http://example.invalid/v1", "w")


async def test_nams_backend_local_wins_over_a_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMORY_API_KEY", "nams_key")
    clean_env.setenv("NAMS_BACKEND", "LOCAL")

    assert isinstance(await opened(), SQLiteBackend)


async def test_nams_backend_hosted(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NAMS_BACKEND", "hosted")
    clean_env.setenv("MEMORY_API_KEY", "nams_key")

    assert isinstance(await opened(), HostedBackend)


async def test_argument_overrides_nams_backend(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NAMS_BACKEND", "hosted")
    clean_env.setenv("MEMORY_API_KEY", "nams_key")

    assert isinstance(await opened(backend="local"), SQLiteBackend)
    clean_env.setenv("NAMS_BACKEND", "local")
    assert isinstance(await opened(backend="hosted"), HostedBackend)
    assert isinstance(await opened(backend="local", api_key="k"), SQLiteBackend)


async def test_api_key_argument_alone_selects_hosted() -> None:
    backend = await opened(api_key="nams_arg")

    assert isinstance(backend, HostedBackend)


@pytest.mark.parametrize("key", [None, "", "   "], ids=["unset", "empty", "blank"])
async def test_hosted_without_a_key_is_a_clear_error(
    clean_env: pytest.MonkeyPatch, key: str | None
) -> None:
    clean_env.setenv("NAMS_BACKEND", "hosted")
    if key is not None:
        clean_env.setenv("MEMORY_API_KEY", key)

    with pytest.raises(AuthenticationError, match="MEMORY_API_KEY"):
        config.open_backend()


async def test_blank_key_in_env_means_local(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMORY_API_KEY", "  ")

    assert isinstance(await opened(), SQLiteBackend)


async def test_unknown_backend_name_is_refused(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("NAMS_BACKEND", "cloud")

    with pytest.raises(InvalidInputError, match="NAMS_BACKEND"):
        config.open_backend()


async def test_environment_alone_points_the_same_code_at_a_server(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """``nams-local serve`` stands in for hosted NAMS: only the environment changes."""
    from tests.wire.loopback import loopback_server

    clean_env.setenv("NAMS_BACKEND", "hosted")
    clean_env.setenv("MEMORY_API_KEY", "nams_open_backend_test")
    clean_env.setenv("MEMORY_ENDPOINT", f"{loopback_server().url}/v1")

    backend = config.open_backend()
    async with backend:
        created = await backend.create_conversation(user_id="env-user")
        got = await backend.get_conversation(created.id)

    assert isinstance(backend, HostedBackend)
    assert (got.id, got.user_id) == (created.id, "env-user")


def test_nams_local_imports_no_backend() -> None:
    """Choosing happens at call time: importing the package pulls in no backend."""
    code = (
        "import sys, nams_local, nams_local.config; "
        "print(sorted(m for m in sys.modules if m.startswith('backends')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"
