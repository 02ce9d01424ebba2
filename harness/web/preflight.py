"""Checking the web providers once, before a run that records their answers starts.

In ``record`` mode every web-tool call goes to the providers and its outcome, failures included, is
stored in the cache; a missing key or an unreachable provider would fill the cache with errors. The
check needs no search credit: it looks for the keys and that each provider's host answers HTTP.
The image host only serves ``google_lens_search`` on local images, so its problems are notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pixelbox.harness.web.base import ProviderError
from pixelbox.harness.web.tools import WebTools

CHECK_TIMEOUT = 10.0


@dataclass(frozen=True)
class ProviderCheck:
    """What the check found: ``problems`` stop the run, ``notes`` are worth printing."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_providers(web: WebTools, timeout: float = CHECK_TIMEOUT) -> ProviderCheck:
    """Check each configured provider that can check itself (a ``check(timeout)`` method)."""
    found = ProviderCheck()
    for role, provider in (("search", web.search), ("reader", web.reader), ("host", web.host)):
        check = getattr(provider, "check", None)
        if check is None:
            continue
        try:
            check(timeout)
        except ProviderError as exc:
            (found.notes if role == "host" else found.problems).append(str(exc))
    return found
