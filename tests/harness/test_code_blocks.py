"""Which ``<code>`` blocks of a turn run: the official general runners' first closed block, or every block.

The model outputs come from a real OpenAI-compatible server on loopback and run in real local sandboxes;
the expected readings of ``first`` follow the official ``parse_model_output`` (a lazy search from the first
``<code>`` to the first ``</code>``, then one ```` ```python ```` / ```` ``` ```` / trailing ```` ``` ````
removal each), worked out by hand from its regular expressions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig
from pixelbox.harness.episode import EpisodeConfig
from pixelbox.harness.episode.codemode import extract_code
from pixelbox.harness.episode.prompts import CODE_BLOCK_RULES
from pixelbox.harness.export import export_run
from pixelbox.harness.runner import run_tasks
from pixelbox.runtime import SandboxOptions
from tests.harness.episodes import executions, make_task, trace_of
from tests.harness.servers import ChatCompletionsServer, completion


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("<code>a = 1</code> and <code>b = 2</code>", ["a = 1"]),
        ("<CODE>\n```python\nx = 1\n```\n</Code>", ["x = 1"]),
        ("<code>```py\nx = 1\n```</code>", ["py\nx = 1"]),  # only ```python lines go whole; ``` alone goes
        ("<code>```\n```python\nx = 1\n```</code>", ["```python\nx = 1"]),  # each removal happens once
        ("<code>\n    if x:\n        y()\n</code>", ["if x:\n        y()"]),  # stripped, first indent lost
        ("cut off <code>\nprint(1)", []),
        ("<code>print(1)\n<code>print(2)</code>", ["print(1)\n<code>print(2)"]),
        ("<code>  </code><code>print(3)</code>", []),  # the first closed block is empty: nothing runs
        ("no code", []),
    ],
)
def test_first_block_reads_as_the_official_parser(text: str, first: list[str]) -> None:
    assert extract_code(text, "first") == first


def test_all_blocks_is_still_available_and_bad_readings_are_refused() -> None:
    assert extract_code("<code>a = 1</code> and <code>b = 2</code>", "all") == ["a = 1", "b = 2"]
    assert extract_code("cut off <code>\nprint(1)", "all") == ["print(1)"]
    with pytest.raises(ValueError, match="code blocks must be one of all, first"):
        extract_code("<code>x</code>", "some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="code_blocks must be one of"):
        EpisodeConfig(mode="gen", code_blocks="every")  # type: ignore[arg-type]


TWO_BLOCKS = """Crop first, then print.
<code>
```python
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
img.crop((0, 0, 40, 40)).save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
print("first block ran")
```
</code>
<code>print("second block ran")</code>"""
UNCLOSED = "One more look.\n<code>\nprint('unclosed block ran')\n"
ANSWER = "<answer>red</answer>"


def _play(
    tmp_path: Path,
    name: str,
    code_blocks: str | None,
    replies: tuple[str, ...] = (TWO_BLOCKS, UNCLOSED, ANSWER),
    **run: Any,
) -> tuple[Path, list[dict]]:
    """Play task t1 with the served ``replies`` into ``tmp_path/name``; it must end answered."""
    task = make_task(tmp_path / "data")
    with ChatCompletionsServer([completion(t) for t in replies]) as server:
        config = OpenAIConfig(model="served", base_url=server.base_url, api_key="sk-test")
        summary = run_tasks(
            [task],
            agent_factory=lambda task: OpenAIAgent(config),
            mode="gen",
            out_dir=tmp_path / name,
            sandbox_options=SandboxOptions(backend="local"),
            progress=False,
            code_blocks=code_blocks,  # type: ignore[arg-type]
            **run,
        )
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}, summary.failed
    return tmp_path / name, bodies


def test_agentic_mme_runs_only_the_first_closed_block_by_default(tmp_path: Path) -> None:
    run, bodies = _play(tmp_path, "first", None)
    system = bodies[0]["messages"][0]["content"]
    assert CODE_BLOCK_RULES["first"] in system and "Every block of a turn runs" not in system
    trace = trace_of(run, "t1")
    assert trace.of_kind("episode_start")[0]["config"]["code_blocks"] == "first"
    [ran] = executions(trace)
    assert "first block ran" in ran["stdout"] and ran["status"] == "ok"
    codes = [a["code"] for a in trace.of_kind("action") if a["type"] == "code"]
    assert codes == [TWO_BLOCKS.split("```python\n")[1].split("\n```")[0]], "fence lines removed, nothing else"
    nudged = bodies[2]["messages"][-1]["content"]
    assert "no action and no <answer>" in str(nudged), "the unclosed block ran nothing: the turn took no action"

    exported = export_run(run, tmp_path / "export")
    folder = exported[0].directory
    assert sorted(p.name for p in folder.glob("model_code_turn_*.py")) == ["model_code_turn_0.py"]
    assert "second block" not in (folder / "model_code_turn_0.py").read_text()
    assert (folder / "exec_stdout_turn_0.txt").read_text() == "first block ran\n"


def test_all_blocks_runs_every_block_and_says_so(tmp_path: Path) -> None:
    run, bodies = _play(tmp_path, "all", "all")
    assert CODE_BLOCK_RULES["all"] in bodies[0]["messages"][0]["content"]
    trace = trace_of(run, "t1")
    assert "code_blocks" not in trace.of_kind("episode_start")[0]["config"], "absent: older runs resume"
    outputs = [e["stdout"] for e in executions(trace)]
    assert outputs == ["first block ran\n", "second block ran\n", "unclosed block ran\n"]


CODE_AND_ANSWER = "<code>print('looked')</code>\n<answer>red</answer>"
PLAIN = "The box is red."


@pytest.mark.parametrize("replies", [[CODE_AND_ANSWER], [PLAIN]], ids=["answer-beside-code", "plain-text"])
def test_official_turn_rules_take_the_answer_as_the_general_runner_does(tmp_path: Path, replies: list[str]) -> None:
    """An <answer> beside code ends the episode once the code ran; a turn with no action and no <answer>
    is itself the answer (the official general runner's fallback). pixelbox's rules refuse both."""
    run, bodies = _play(tmp_path, "run", None, (*replies, ANSWER), turn_rules="official")
    trace = trace_of(run, "t1")
    end = trace.of_kind("episode_end")[0]
    assert len(bodies) == 1, "the first turn ended the episode"
    assert trace.of_kind("episode_start")[0]["config"]["turn_rules"] == "official"
    if replies == [PLAIN]:
        assert end["answer"] == PLAIN and not executions(trace)
    else:
        assert end["answer"] == "red" and [e["stdout"] for e in executions(trace)] == ["looked\n"]


def test_pixelbox_turn_rules_refuse_an_answer_beside_code(tmp_path: Path) -> None:
    run, bodies = _play(tmp_path, "run", None, (CODE_AND_ANSWER, PLAIN, ANSWER))
    assert len(bodies) == 3, "refused, nudged, then answered"
    assert "turn_rules" not in trace_of(run, "t1").of_kind("episode_start")[0]["config"]
