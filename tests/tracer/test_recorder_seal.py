"""The recorder notices events it did not record: appended, edited, removed or a replaced list,
while its own late changes (an artifact linked to an event) stay clean. In process, no kernel;
the same attacks through a real sandbox are in tests/hardening/test_evidence_forgery.py."""

from __future__ import annotations

from typing import Any

from PIL import Image

from pixelbox.kernel.recorder import Recorder


def recorded(**changes: Any) -> Recorder:
    """A recorder in an execution with one real crop recorded (an image made and cropped)."""
    rec = Recorder()
    rec.begin()
    image = Image.new("RGB", (40, 40))
    rec.c(image.crop, 1, 0)((0, 0, 10, 10))
    assert [e["op"] for e in rec.events] == ["crop"], rec.events
    return rec


def test_what_the_recorder_recorded_is_clean() -> None:
    rec = recorded()
    rec.end()
    assert rec.problems == []


def test_an_edited_event_is_noticed() -> None:
    rec = recorded()
    rec.events[0]["params"]["box"] = [5, 5, 35, 35]
    rec.end()
    assert rec.problems == ["the execution's events were edited outside the recorder"]


def test_appended_and_removed_events_are_noticed() -> None:
    for change in (lambda events: events.append(dict(events[0], seq=9)), lambda events: events.pop()):
        rec = recorded()
        change(rec.events)
        rec.end()
        assert rec.problems == ["events were added to or removed from the execution's trace outside the recorder"]


def test_a_replaced_event_list_is_dropped_and_noticed() -> None:
    rec = recorded()
    rec.events = ({"op": "crop"},)  # type: ignore[assignment]
    assert rec.end() == []
    assert rec.problems == ["the recorder's event list was replaced; the execution's events were dropped"]


def test_linking_an_artifact_keeps_the_seal() -> None:
    rec = Recorder()
    rec.begin()
    image = Image.new("RGB", (8, 8))
    rec.link_artifact(image, {"index": 1})
    events = rec.end()
    assert [e["op"] for e in events] == ["io"] and events[0]["artifact"] == {"index": 1}
    assert rec.problems == []


def test_linking_an_artifact_to_a_recorded_save_keeps_the_seal(tmp_path: Any) -> None:
    rec = Recorder()
    rec.begin()
    path = str(tmp_path / "saved.png")
    rec.c(Image.new("RGB", (8, 8)).save, 1, 0)(path)
    rec.link_artifact(path, {"index": 2})
    events = rec.end()
    assert [e["op"] for e in events] == ["io"] and events[0]["artifact"] == {"index": 2}, events
    assert rec.problems == []
