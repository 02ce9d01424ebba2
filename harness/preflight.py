"""One check of a run's outside services before its first episode: the agent endpoint, and the web
providers when the run records their answers.

A run against a dead endpoint otherwise spends every episode's retries (about half a minute each)
before ending each in ``agent_error``; this check ends it within seconds with one message. Agents
that can check themselves have a ``preflight()`` method (:class:`~pixelbox.harness.agents.OpenAIAgent`);
replay agents have none and pass.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from pixelbox.harness.agents.base import AgentError
from pixelbox.harness.web import WebTools
from pixelbox.harness.web.preflight import check_providers


class PreflightError(ValueError):
    """The agent endpoint or a web provider cannot serve the run; nothing was started."""


def check_services(
    agent: Any,
    web: WebTools | None,
    check_web: Callable[[WebTools], tuple[list[str], list[str]]] | None = None,
) -> None:
    """Raise :class:`PreflightError` with every problem found; print notes (e.g. an optional key) to stderr.

    ``check_web`` checks the providers the run's suite uses (``Suite.check_web``); by default the shared ones.
    """
    problems: list[str] = []
    preflight = getattr(agent, "preflight", None)
    if callable(preflight):
        try:
            preflight()
        except AgentError as exc:
            problems.append(str(exc))
    if web is not None and web.cache.mode == "record":
        if check_web is not None:
            found_problems, found_notes = check_web(web)
        else:
            found = check_providers(web)
            found_problems, found_notes = found.problems, found.notes
        problems += [f"web tools (record mode): {p}" for p in found_problems]
        for note in found_notes:
            print(f"pixelbox: note: web tools (record mode): {note}", file=sys.stderr)
    if problems:
        raise PreflightError(
            "cannot start the run: "
            + "; ".join(problems)
            + ". No episode was started and nothing was marked finished; run the same command again once fixed"
        )
