"""Reading provider API keys from arguments or the environment, with errors that say what to set."""

from __future__ import annotations

import os

from pixelbox.harness.web.base import ProviderError


def require_key(explicit: str | None, env_var: str, service: str, used_for: str) -> str:
    """The key given, else ``$env_var``; a :class:`ProviderError` naming the variable when neither is set."""
    key = explicit or os.environ.get(env_var)
    if not key:
        raise ProviderError(
            f"{env_var} is not set: {used_for} needs a {service} API key "
            "(or replay a recorded web cache, which needs no key)"
        )
    return key
