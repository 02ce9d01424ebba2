"""Scoring enforces what the tracer threat model promises (docs/tracer-threat-model.md).

- Events of an execution the runtime flagged as tampered satisfy no V_tool checkpoint (a flag
  relaxes it), and the episode report lists the notices.
- Every artifact V_true would judge is first replayed from its root input with the canonical
  implementations; an artifact its recorded chain does not reproduce is not evidence.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pixelbox.cli import main
from pixelbox.harness.scoring.from_trace import DAMAGED, episode_from_trace
from pixelbox.harness.scoring.judges import GeometricJudge
from pixelbox.harness.scoring.run import score_run, write_report
from pixelbox.harness.scoring.score import ScoringOptions, score_episode
from pixelbox.harness.scoring.view import EpisodeView, TracedEvent
from pixelbox.harness.scoring.vtrue import Replayer
from pixelbox.tracer.events import Event, EventFormatError
from pixelbox.tracer.replay import CONSISTENT_AT
from tests.scoring.builders import EVIDENCE, SIGN_PX, atomic_episode, code_episode, event, save_artifact
from tests.scoring.test_from_trace import write_trace

SAME_SIZE_ON_SIGN = (SIGN_PX[0], SIGN_PX[1], SIGN_PX[0] + 300, SIGN_PX[1] + 200)
"""A 300x200 part of the sign: the size of the claimed crop of the red square, other pixels."""
NOTICE = "trace integrity: PIL.Image.Image.crop was replaced by my_crop"


def checkpoint(score, cid: str):  # type: ignore[no-untyped-def]
    return next(c for c in score.checkpoints if c.checkpoint_id == cid)


def test_a_tampered_execution_cannot_satisfy_a_tool_checkpoint(tmp_path: Path) -> None:
    path = write_trace(code_episode(tmp_path), tmp_path / "run", tampered={0: [NOTICE]})
    view = episode_from_trace(path)
    assert [i.tampered for i in view.interactions] == [True, False, False]
    assert view.interactions[0].notices == (NOTICE,)
    score = score_episode(view, [GeometricJudge()])
    v1 = checkpoint(score, "V1")
    assert v1.tool is False and v1.true is False
    assert any("flagged as tampered" in r and NOTICE in r for r in v1.evidence["rejected"])
    assert checkpoint(score, "V2").tool is False  # V2 is in an ordering constraint with V1
    assert score.tamper == ({"interaction": 0, "notices": [NOTICE], "trusted": False},)
    trusting = score_episode(view, [GeometricJudge()], options=ScoringOptions(trust_tampered=True))
    assert checkpoint(trusting, "V1").tool is True and checkpoint(trusting, "V1").true is True
    assert trusting.tamper[0]["trusted"] is True


def test_an_untampered_trace_scores_as_before(tmp_path: Path) -> None:
    view = episode_from_trace(write_trace(code_episode(tmp_path), tmp_path / "run"))
    score = score_episode(view, [GeometricJudge()])
    assert score.tamper == () and checkpoint(score, "V1").tool is True


def test_the_episode_report_shows_tamper_notices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    write_trace(code_episode(tmp_path), run, tampered={0: [NOTICE]})
    assert main(["score", str(run), "--judge", "geometric", "--quiet"]) == 0
    assert main(["report", str(run)]) == 0
    page = (run / "report" / "fixture-model-0001-gen.html").read_text()
    assert "<h2>Trace integrity</h2>" in page and NOTICE in page and "satisfy no checkpoint" in page
    assert "tampered executions: 1" in (run / "report" / "index.html").read_text()
    assert "flagged as tampered: 1" in (run / "report.md").read_text()
    capsys.readouterr()
    assert main(["score", str(run), "--judge", "geometric", "--quiet", "--trust-tampered"]) == 0
    assert "| gen | overall | 1 | 0 | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% |" in capsys.readouterr().out


def fabricated(tmp: Path) -> EpisodeView:
    """The trace claims crops of the red square, but the saved images (same size) show the sign."""
    honest = code_episode(tmp)
    root = honest.root_images[0]
    fakes = tuple(
        save_artifact(root, SAME_SIZE_ON_SIGN, a.path, a.index, a.interaction, tuple(EVIDENCE), a.event_seq)
        for a in honest.artifacts
    )
    return replace(honest, artifacts=fakes)


def test_an_artifact_its_chain_does_not_reproduce_is_not_evidence(tmp_path: Path) -> None:
    episode = fabricated(tmp_path)
    unchecked = score_episode(episode, [GeometricJudge()], options=ScoringOptions(replay=False))
    assert checkpoint(unchecked, "V1").true is True  # lineage alone is fooled
    score = score_episode(episode, [GeometricJudge()])
    v1 = checkpoint(score, "V1")
    assert v1.true is False and v1.tool is True
    replays = {r["artifact"]: r for r in v1.evidence["replay"]}
    assert set(replays) == {1, 2}
    assert all(r["verdict"] == "inconsistent" and r["score"] < CONSISTENT_AT for r in replays.values())
    assert all(r["reason"] == "pixels differ" for r in replays.values())
    assert "no artifact is explained by its recorded operations" in v1.evidence["true_reason"]
    assert f"artifact 1: {replays[1]['score']}" in v1.evidence["true_reason"]


def test_honest_artifacts_replay_consistently(tmp_path: Path) -> None:
    score = score_episode(code_episode(tmp_path), [GeometricJudge()])
    v1 = checkpoint(score, "V1")
    assert v1.true is True
    assert [(r["artifact"], r["verdict"]) for r in v1.evidence["replay"]] == [(1, "consistent"), (2, "consistent")]
    assert all(r["score"] >= CONSISTENT_AT for r in v1.evidence["replay"])


def test_one_reproduced_artifact_is_enough_and_the_other_is_named(tmp_path: Path) -> None:
    honest = code_episode(tmp_path)
    fake = save_artifact(honest.root_images[0], SIGN_PX, tmp_path / "fake.png", 2, 2, tuple(EVIDENCE), 5)
    score = score_episode(replace(honest, artifacts=(honest.artifacts[0], fake)), [GeometricJudge()])
    v1 = checkpoint(score, "V1")
    assert v1.true is True
    assert "not counted (replay does not reproduce them): artifact 2" in v1.evidence["true_reason"]


def test_unverifiable_chains_are_still_judged_on_their_pixels(tmp_path: Path) -> None:
    honest = code_episode(tmp_path)
    drawn = (
        *honest.events[:2],
        TracedEvent(0, event(2, 0, "draw", ["img:1"], "img:9", {})),
        TracedEvent(0, event(3, 0, "io", ["img:9"], None, {"action": "save"}, artifact={"index": 1})),
    )
    artifact = replace(honest.artifacts[0], event_seq=3)
    cp = [c for c in honest.task.checkpoints if c["id"] == "V1"]
    episode = replace(
        honest, events=drawn, artifacts=(artifact,), task=replace(honest.task, process_evaluation={"checkpoints": cp})
    )
    v1 = checkpoint(score_episode(episode, [GeometricJudge()]), "V1")
    assert v1.evidence["replay"][0]["verdict"] == "unverifiable" and "draw" in v1.evidence["replay"][0]["reason"]
    assert v1.true is True


def test_replay_reads_the_runs_stored_copies_and_the_task_inputs(tmp_path: Path) -> None:
    run = tmp_path / "run"
    view = code_episode(tmp_path)
    write_trace(view, run, store_images=True)
    for artifact in view.artifacts:  # the sandbox workspace is gone after the episode
        artifact.path.unlink()
    read = episode_from_trace(run / "episodes" / "0001.jsonl")
    assert all(a.path.is_relative_to(run) for a in read.artifacts)
    v1 = checkpoint(score_episode(read, [GeometricJudge()]), "V1")
    assert v1.true is True and {r["verdict"] for r in v1.evidence["replay"]} == {"consistent"}


def test_the_report_shows_the_replay_scores(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    episode = fabricated(run)
    score_run(run, ["geometric"], episodes=[episode], progress=False)
    page = (Path(write_report(run)["html"]).parent / "fixture-model-0001-gen.html").read_text()
    v1_row = page.split("id='cp-V1'", 1)[1].split("</tr>", 1)[0]
    assert "replay of artifact 1: inconsistent, similarity 0." in v1_row


def test_replay_follows_a_chain_through_an_earlier_artifact(tmp_path: Path) -> None:
    """Atomic calls on image N start from ``artifact:N``; the replay continues through its own chain."""
    episode = atomic_episode(tmp_path)
    events = tuple(
        TracedEvent(t.interaction, replace(t.event, inputs=("artifact:1",))) if t.event.op == "enhance" else t
        for t in episode.events
    )
    replays = Replayer(replace(episode, events=events))
    checked = replays.check(episode.artifacts[1])
    assert checked["verdict"] == "consistent" and "from input:0" in checked["reason"]


def forge_event(trace: Path, **fields: object) -> None:
    """Add to the first execution of ``trace`` one event copied from its first, with ``fields`` changed."""
    lines = trace.read_text().splitlines()
    for n, line in enumerate(lines):
        record = json.loads(line)
        events = (record.get("execution") or {}).get("events")
        if record.get("kind") == "observation" and events:
            events.append({**events[0], "seq": events[-1]["seq"] + 1, **fields})
            lines[n] = json.dumps(record)
            break
    else:
        raise AssertionError("no observation with events to forge into")
    trace.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("forged", [{"output": []}, {"inputs": "input:0"}, {"src": {"line": "1"}}, {"t_ms": None}])
def test_a_forged_event_of_the_wrong_shape(tmp_path: Path, forged: dict[str, object]) -> None:
    """Validation refuses a kernel event whose fields have the wrong type (an output that is an empty
    list used to pass, then break lineage); a trace holding one is that episode's failure
    (``damaged_trace``, no answer, not infrastructure) and the run's other episodes are scored."""
    with pytest.raises(EventFormatError, match=next(iter(forged))):
        Event.from_dict({**code_episode(tmp_path).events[0].event.to_dict(), **forged})
    run = tmp_path / "run"
    view = code_episode(tmp_path)
    damaged = write_trace(view, run)
    forge_event(damaged, **forged)
    write_trace(replace(view, task=replace(view.task, task_id="0002")), run)
    result = score_run(run, ["geometric"], progress=False)
    by_task = {r["score"]["task_id"]: r["score"] for r in result["episodes"]}
    assert set(by_task) == {view.task.task_id, "0002"}
    failed = by_task[view.task.task_id]
    assert failed["termination"] == DAMAGED and not failed["infrastructure"] and not failed["acc"], failed
    assert by_task["0002"]["acc"] and by_task["0002"]["termination"] == "answered"
    assert result["summary"]["infrastructure"]["count"] == 0
