"""The official Agent-X judge prompts, read at run time from the user's own checkout (never shipped here).

``PIXELBOX_AGENTX_OFFICIAL=/path/to/Agent-X`` makes the judge use the system prompts of
``evaluation/multiagent_evaluation.py`` instead of our rubrics (:data:`.scoring.RUBRICS`). The file
must be the one of commit c62b043 (its SHA-256 is checked), else scoring stops with a clear error;
each metric's prompt is the first string assigned in its function, read with :mod:`ast` (the file is
never imported or run: it sets an API key and calls the network at import in some versions).
"""

from __future__ import annotations

import ast
import hashlib
import os
from pathlib import Path

ENV = "PIXELBOX_AGENTX_OFFICIAL"
FILE = Path("evaluation") / "multiagent_evaluation.py"
SHA256 = "f19d8e4e64fd61e18ad22581b5035c53a0516d5769b5208e0b55b15c94c5e039"
"""``evaluation/multiagent_evaluation.py`` at commit c62b043."""
FUNCTIONS = {
    "grounding": "get_grounding_score",
    "tool_precision": "get_precision_score",
    "tool_accuracy": "get_tool_accuray",
    "faithfulness": "get_faithfulness_accuray",
    "goal_accuracy": "get_goal_accuray",
    "toolset_accuracy": "get_toolset_accuray",
    "context": "get_context_score",
    "factual_precision": "get_factual_precision",
    "semantic_accuracy": "get_semantic_accuracy",
}


class OfficialPromptsError(ValueError):
    """The named checkout is missing the file, or holds another version of it."""


def official_rubrics() -> dict[str, str] | None:
    """The official system prompt per metric when ``PIXELBOX_AGENTX_OFFICIAL`` names a verified checkout, else None."""
    root = os.environ.get(ENV)
    if not root:
        return None
    path = Path(root) / FILE
    if not path.is_file():
        raise OfficialPromptsError(f"{ENV}={root}: no {FILE} there; point it at a checkout of mbzuai-oryx/Agent-X")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        raise OfficialPromptsError(
            f"{path} is not the file of commit c62b043 (sha256 {digest}, expected {SHA256}); check out that commit"
        )
    return prompts_of(data.decode("utf-8"))


def prompts_of(source: str) -> dict[str, str]:
    """The first string constant assigned in each metric's function of ``source``."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for metric, name in FUNCTIONS.items():
            if node.name != name:
                continue
            for statement in node.body:
                value = statement.value if isinstance(statement, ast.Assign) else None
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found[metric] = value.value
                    break
    missing = sorted(set(FUNCTIONS) - set(found))
    if missing:
        raise OfficialPromptsError(f"no prompt found for {', '.join(missing)}")
    return found
