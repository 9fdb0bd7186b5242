"""The hosted NAMS REST client: ``HostedBackend``, one module per group of routes."""

from .backend import HostedBackend
from .base import DEFAULT_ENDPOINT, WORKSPACE_ENV
from .capabilities import HOSTED_CAPABILITIES, ServerCapabilities
from .retry import RetryPolicy

__all__ = [
    "DEFAULT_ENDPOINT",
    "HOSTED_CAPABILITIES",
    "WORKSPACE_ENV",
    "HostedBackend",
    "RetryPolicy",
    "ServerCapabilities",
]
