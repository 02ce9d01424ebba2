"""Overthink = max(0, C_agent - C_human) / (C_human + 1).

C counts interactions (tool calls or executed code blocks) that produced at least one new
observable artifact; C_human is the task's ``efficiency.reference_tool_calls``.
"""

from __future__ import annotations

from .view import EpisodeView


def productive_interactions(episode: EpisodeView) -> int:
    """C_agent: interactions that produced at least one new artifact."""
    producers = {a.interaction for a in episode.artifacts}
    producers |= {i.index for i in episode.interactions if i.artifacts}
    return len(producers)


def overthink(episode: EpisodeView) -> float | None:
    """The episode's Overthink, or None when the task gives no human reference."""
    human = episode.task.reference_calls
    if human is None:
        return None
    return max(0, productive_interactions(episode) - human) / (human + 1)
