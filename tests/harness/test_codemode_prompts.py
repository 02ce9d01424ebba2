"""Reading code-mode turns, and the prompt templates."""

from __future__ import annotations

from pathlib import Path

import pytest

from pixelbox.harness.episode.codemode import extract_answer, extract_code, has_bare_fence, parse_turn
from pixelbox.harness.episode.prompts import PromptTemplates, TemplateError, prompt_values


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("<code>print(1)</code>", ["print(1)"]),
        ("a <code>\n```python\nx = 1\nprint(x)\n```\n</code> b <CODE>y = 2</CODE>", ["x = 1\nprint(x)", "y = 2"]),
        ("<code>```\nz = '```'\n```</code>", ["z = '```'"]),
        ("<code>  if x:\n      pass\n</code>", ["  if x:\n      pass"]),
        ("<code></code><code>\n\n</code>", []),
        ("cut off <code>\nimport os\nprint(os.getcwd())", ["import os\nprint(os.getcwd())"]),
        ("no code at all", []),
    ],
)
def test_code_blocks_are_found_and_fences_dropped(text: str, blocks: list[str]) -> None:
    assert extract_code(text) == blocks


def test_answers_and_bare_fences() -> None:
    assert extract_answer("<answer> 42 </answer>") == "42"
    assert extract_answer("<answer>a</answer> then <answer>b</answer>") == "b"
    assert extract_answer("the answer is 42") is None
    assert parse_turn("<code>x=1</code><answer>1</answer>").answer == "1"
    assert has_bare_fence("Run this:\n```python\nprint(1)\n```") and not has_bare_fence(
        "<code>```python\nx\n```</code>"
    )


def test_templates_fill_in_task_facts_and_reject_unknown_placeholders(tmp_path: Path) -> None:
    values = prompt_values(
        prompt="How many?",
        image_names=["image_0001.png"],
        profile="agentic-mme",
        web_tools=["google_search"],
        image_tools=["crop(...)"],
        max_rounds=7,
        max_tool_calls=9,
        execution_timeout=30,
    )
    default = PromptTemplates().system_text("gen", values)
    assert "image 0 is image_0001.png" in default and "at most 7 turns" in default and "google_search" in default
    assert "$" not in default
    atomic = PromptTemplates().system_text("atm", values)
    assert "crop(...)" in atomic and "0-1000" in atomic
    (tmp_path / "system.txt").write_text("Mode for $images costs $$5; rounds: $max_rounds")
    custom = PromptTemplates.from_files(tmp_path / "system.txt")
    assert custom.system_text("gen", values) == "Mode for image 0 is image_0001.png costs $5; rounds: 7"
    assert custom.user_text(values) == "How many?"
    with pytest.raises(TemplateError, match=r"unknown prompt placeholder\(s\) \$task"):
        PromptTemplates(system="Solve $task")
