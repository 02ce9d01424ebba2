"""The official prompt texts, read from a user's own checkout of hkust-nlp/AgentVista, never shipped here.

pixelbox's prompts for AgentVista are in our own words. A user who wants the official wording
points ``PIXELBOX_AGENTVISTA_OFFICIAL`` at their checkout; the two files are accepted only if their
sha256 matches the commit we studied (a3385d5), so a run says exactly which text it used. The agent
then gets the official ``multi_tool_agent_search`` system prompt and the judge the official
verifier's system and query prompts (both take ``{question}``, ``{ground_truth}``, ``{prediction}``).
"""

from __future__ import annotations

import ast
import hashlib
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

OFFICIAL_ENV = "PIXELBOX_AGENTVISTA_OFFICIAL"
COMMIT = "a3385d5"
PROMPTS_FILE = "prompts/inference_prompts.yaml"
VERIFIER_FILE = "utils/general_qa_tool.py"
PINNED = {
    PROMPTS_FILE: "be4ff247a67a91f44147d8cfa15221a8972b2ec4680a2edc286c1252686751fc",
    VERIFIER_FILE: "1aea9f28fd4a53e40f3b48f0058b5ff8260c31518f90476c924005c724faea79",
}
SYSTEM_KEY = "multi_tool_agent_search"


class OfficialTextError(ValueError):
    """The checkout does not hold the files we verified; the message names the file and both hashes."""


@dataclass(frozen=True)
class OfficialTexts:
    """The official agent system prompt and the verifier's prompts, with where they came from."""

    system_prompt: str
    judge_system: str
    judge_query: str
    source: str


def load_official(checkout: str | Path) -> OfficialTexts:
    """The texts of ``checkout`` after checking both files' sha256 against the pinned commit."""
    root = Path(checkout)
    texts = {name: _verified(root, name) for name in PINNED}
    verifier = _module_strings(texts[VERIFIER_FILE])
    return OfficialTexts(
        system_prompt=_block_scalar(texts[PROMPTS_FILE], SYSTEM_KEY),
        judge_system=verifier["SYSTEM_PROMPT"],
        judge_query=verifier["QUERY_PROMPT"],
        source=f"hkust-nlp/AgentVista@{COMMIT} ({root})",
    )


def official_from_env() -> OfficialTexts | None:
    """The official texts when ``PIXELBOX_AGENTVISTA_OFFICIAL`` names a checkout, else None."""
    checkout = os.environ.get(OFFICIAL_ENV)
    return load_official(checkout) if checkout else None


def _verified(root: Path, name: str) -> str:
    path = root / name
    if not path.is_file():
        raise OfficialTextError(f"{OFFICIAL_ENV}={root}: {name} is missing; point it at a checkout of AgentVista")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != PINNED[name]:
        raise OfficialTextError(
            f"{path} has sha256 {digest}, not {PINNED[name]} (commit {COMMIT}); check out {COMMIT} or unset "
            f"{OFFICIAL_ENV} to use pixelbox's own wording"
        )
    return data.decode("utf-8")


def _block_scalar(yaml_text: str, key: str) -> str:
    """The ``key: |`` block of a YAML file: the following lines indented deeper than the key, dedented."""
    lines = yaml_text.splitlines()
    for number, line in enumerate(lines):
        if line.strip() == f"{key}: |":
            indent = len(line) - len(line.lstrip())
            body = []
            for following in lines[number + 1 :]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                body.append(following)
            return textwrap.dedent("\n".join(body)).strip("\n") + "\n"
    raise OfficialTextError(f"{PROMPTS_FILE} has no '{key}: |' block")


def _module_strings(source: str) -> dict[str, str]:
    """Module-level ``NAME = "literal"`` assignments of a Python file (read, never run)."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    missing = {"SYSTEM_PROMPT", "QUERY_PROMPT"} - set(found)
    if missing:
        raise OfficialTextError(f"{VERIFIER_FILE} lacks {', '.join(sorted(missing))}")
    return found
