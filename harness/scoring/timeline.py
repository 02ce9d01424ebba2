"""The episode's steps in true chronological order: visual operations and search calls.

Checkpoint hits and ordering gaps are positions on this one timeline, so code mode (many
operations per block) and atomic mode (one per call) are measured the same way, and a search
made between two code blocks sits between their operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .view import EpisodeView, SearchCall, TracedEvent


@dataclass(frozen=True)
class Step:
    """One position on the timeline: a visual event or a search call."""

    position: int
    kind: Literal["event", "search"]
    interaction: int
    traced: TracedEvent | None = None
    search: SearchCall | None = None

    @property
    def label(self) -> str:
        if self.traced is not None:
            e = self.traced.event
            return f"#{self.position} {e.op} (exec {e.exec}, seq {e.seq}, {e.status})"
        assert self.search is not None
        return f"#{self.position} {self.search.tool}({self.search.query!r})"


def timeline(episode: EpisodeView) -> list[Step]:
    """Visual events (any status) and search calls, ordered by interaction then event seq."""
    keyed: list[tuple[tuple[int, int, int], TracedEvent | SearchCall]] = []
    for traced in episode.events:
        if traced.event.is_visual:
            keyed.append(((traced.interaction, 0, traced.event.seq), traced))
    for n, call in enumerate(episode.searches):
        keyed.append(((call.interaction, 1, n), call))
    keyed.sort(key=lambda item: item[0])
    steps = []
    for position, (key, item) in enumerate(keyed):
        if isinstance(item, TracedEvent):
            steps.append(Step(position, "event", key[0], traced=item))
        else:
            steps.append(Step(position, "search", key[0], search=item))
    return steps
