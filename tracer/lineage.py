"""Lineage on the host: the chain of events that produced an image or an artifact."""

from __future__ import annotations

from typing import Any

from pixelbox.contract.geometry import Lineage, compose, normalize_box
from pixelbox.tracer.events import Event


class LineageError(LookupError):
    """The requested image or artifact does not appear in the events."""


def chain_for(events: list[Event], target: str) -> list[Event]:
    """Events from the root image to ``target`` (an image id), oldest first.

    Follows each event's first input back to the event that produced it; a root is an id
    that no event produced (``input:K``, or an image that first appeared unrecorded).
    """
    producer = {e.output: e for e in events if e.output is not None and e.status == "ok"}
    chain: list[Event] = []
    label: str | None = target
    seen: set[str] = set()
    while label is not None and label in producer and label not in seen:
        seen.add(label)
        event = producer[label]
        chain.append(event)
        label = event.inputs[0] if event.inputs else None
    chain.reverse()
    return chain


def root_of(chain: list[Event], target: str) -> str:
    """The root id a chain starts from (``target`` itself when nothing produced it)."""
    if not chain:
        return target
    first = chain[0]
    return first.inputs[0] if first.inputs else first.output or target


def artifact_chain(events: list[Event], artifact: Any) -> list[Event]:
    """Events that produced the image behind ``artifact`` (the linked save/capture event last)."""
    for event in reversed(events):
        if event.artifact == artifact and event.inputs:
            return [*chain_for(events, event.inputs[0]), event]
    raise LineageError(f"no event is linked to artifact {artifact!r}; was it captured in this trace?")


__all__ = ["Lineage", "LineageError", "artifact_chain", "chain_for", "compose", "normalize_box", "root_of"]
