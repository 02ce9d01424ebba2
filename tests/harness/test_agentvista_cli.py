"""``pixelbox run|score|report --suite agentvista`` from the command line, and the official prompt texts
taken only from a checkout whose files match the pinned sha256."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path

import pytest

from pixelbox.cli import main
from pixelbox.harness.suites.agentvista import official
from pixelbox.harness.suites.agentvista.official import OFFICIAL_ENV, OfficialTextError, load_official
from tests.harness.episodes import task_image
from tests.harness.servers import ChatCompletionsServer, completion


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _val_json(root: Path) -> Path:
    task_image(root / "a.png")
    records = [
        {"question_id": "good", "problem": "<image>What colour is the box?", "images": ["a.png"], "solution": "red"},
        {"question_id": "bad", "problem": "<image>?", "images": ["gone.png"], "solution": "x"},
    ]
    (root / "val.json").write_text(json.dumps(records))
    return root / "val.json"


def test_run_score_report_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv(OFFICIAL_ENV, raising=False)
    tasks = _val_json(tmp_path / "data")
    system = tmp_path / "system.txt"
    system.write_text("You are tested. Answer in <answer></answer>.")
    script = [
        completion("", [("code_interpreter", {"code": "import numpy as np\nnp.asarray(image)[100, 300].tolist()"})]),
        completion("<answer>red</answer>"),
    ]
    with ChatCompletionsServer(script, models=["local-vlm"]) as server:
        code, out, err = _cli(
            "run", "--suite", "agentvista", "--tasks", str(tasks), "--agent", "openai:local-vlm",
            "--base-url", server.base_url, "--backend", "local", "--out", str(tmp_path / "run"),
            "--system-prompt", str(system), "--no-progress",
        )  # fmt: skip
        bodies = server.bodies()
    assert code == 0, out + err
    assert "skipped:" in err and "gone.png does not exist" in err
    assert bodies[0]["messages"][0]["content"] == system.read_text()
    assert "execute_result:\n\n```\n[230, 20, 20]\n```" in json.loads(bodies[1]["messages"][3]["content"])["result"]
    code, out, _ = _cli("score", str(tmp_path / "run"), "--suite", "agentvista", "--quiet")
    assert code == 0 and "| gen | overall | 1 | 0 | 100.0% |" in out
    code, out, _ = _cli("report", str(tmp_path / "run"), "--suite", "agentvista")
    assert code == 0 and Path(json.loads(out)["html"]).is_file()


def _checkout(root: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "utils").mkdir()
    (root / "prompts" / "inference_prompts.yaml").write_text(
        "prompts:\n  other: |\n    no\n  multi_tool_agent_search: |\n    Line one.\n\n    - line two\n  after: x\n"
    )
    (root / "utils" / "general_qa_tool.py").write_text(
        'SYSTEM_PROMPT = (\n    "Judge "\n    "well."\n)\n'
        'QUERY_PROMPT = """Q {question} G {ground_truth} P {prediction}"""\n'
    )
    return root


def test_official_texts_come_only_from_a_verified_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = _checkout(tmp_path / "AgentVista")
    with pytest.raises(OfficialTextError, match=r"has sha256 .* not be4ff247"):
        load_official(checkout)
    monkeypatch.setenv(OFFICIAL_ENV, str(checkout))
    code, _, err = _cli(
        "run", "--suite", "agentvista", "--tasks", str(_val_json(tmp_path / "data")), "--agent", "replay:none",
        "--backend", "local", "--out", str(tmp_path / "run"),
    )  # fmt: skip
    assert code != 0 and "sha256" in err and OFFICIAL_ENV in err
    # the same reading on files pinned for this test: the YAML block and the module's string constants
    pinned = {name: hashlib.sha256((checkout / name).read_bytes()).hexdigest() for name in official.PINNED}
    monkeypatch.setattr(official, "PINNED", pinned)
    texts = load_official(checkout)
    assert texts.system_prompt == "Line one.\n\n- line two\n"
    assert texts.judge_system == "Judge well." and texts.judge_query.startswith("Q {question} G")
