"""A VisualToolBench run in the official output layout, so the official judge scripts can grade it too.

``pixelbox export RUN --suite visualtoolbench --out DIR`` writes, for each model of the run,
``DIR/single_turn/{model}_w_tool_system_high_max_tool_calls_{N}_trial_1.json`` and the same under
``multi_turn/`` (the names ``run_model_response_*.py`` give; ``N`` is the run's round limit): per task
``task_id``, ``turncase``, ``eval_focus``, ``prompt_category``, and for single-turn ``prompt``,
``golden_answer``, ``rubrics``, ``model_answer``, ``num_tool_calls``, ``tool_use_list``
(``{function_name, function_args, observation}``) and ``content_list`` (``{step, content}``), for
multi-turn the same per turn under ``turns``. Beside each goes ``clean_rubrics.json``, the file the
official judge requires and the release does not ship (``[{task_id, rubrics}]``, multi-turn
``[{task_id, turns: [{rubrics}]}]``), built from the tasks' ``rubrics_by_turn``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pixelbox.harness.traces.store import find_traces, read_trace

from .tasks import VtbTask


@dataclass(frozen=True)
class ExportedFile:
    """One file written; ``finished`` False when it holds an episode that never ended."""

    directory: Path
    finished: bool = True


@dataclass
class _Turn:
    tools: list[dict[str, Any]] = field(default_factory=list)
    contents: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0


def export_vtb_run(run_dir: str | Path, out: str | Path) -> list[ExportedFile]:
    """Write the run's episodes in the official layout under ``out``; returns the files written."""
    root, target = Path(run_dir), Path(out)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    rubrics: dict[str, list[dict[str, Any]]] = {"single_turn": [], "multi_turn": []}
    rounds_limit, unfinished = 20, False
    for path in find_traces(root):
        trace = read_trace(path)
        start = trace.of_kind("episode_start")[0]
        task = VtbTask.from_dict(start["task"])
        rounds_limit = int(((start.get("config") or {}).get("vtb") or {}).get("max_rounds") or rounds_limit)
        ends = trace.of_kind("episode_end")
        unfinished |= not ends
        answers = list((ends[-1] if ends else {}).get("turn_answers") or [])
        turns = _turns(trace.records, len(task.turns))
        kind = "single_turn" if len(task.turns) == 1 else "multi_turn"
        groups.setdefault((kind, str(start.get("model") or "model")), []).append(_entry(task, answers, turns))
        rubric_sets = [{r.rubric_id: _rubric(r.to_dict()) for r in turn.rubrics} for turn in task.turns]
        if kind == "single_turn":
            rubrics[kind].append({"task_id": task.task_id, "rubrics": rubric_sets[0]})
        else:
            rubrics[kind].append({"task_id": task.task_id, "turns": [{"rubrics": r} for r in rubric_sets]})
    written: list[ExportedFile] = []
    for (kind, model), entries in sorted(groups.items()):
        folder = target / kind
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{_safe(model)}_w_tool_system_high_max_tool_calls_{rounds_limit}_trial_1.json"
        (folder / name).write_text(json.dumps(entries, ensure_ascii=False, indent=2), encoding="utf-8")
        written.append(ExportedFile(folder / name, not unfinished))
    for kind, items in rubrics.items():
        if items:
            (target / kind).mkdir(parents=True, exist_ok=True)
            path = target / kind / "clean_rubrics.json"
            path.write_text(json.dumps(items, ensure_ascii=False, indent=2), encoding="utf-8")
            written.append(ExportedFile(path))
    return written


def _rubric(raw: dict[str, Any]) -> dict[str, Any]:
    weight = raw.get("weight")
    whole = int(weight) if isinstance(weight, float) and weight.is_integer() else weight
    return {**{k: v for k, v in raw.items() if k != "rubric_id"}, "weight": whole}


def _turns(records: list[dict[str, Any]], count: int) -> list[_Turn]:
    """Tool calls (with their results) and model texts of each turn, read from the trace."""
    turns = [_Turn() for _ in range(max(count, 1))]
    current, actions = 0, {}
    for record in records:
        kind = record.get("kind")
        if kind == "message" and isinstance(record.get("turn"), int):
            current = min(record["turn"], len(turns) - 1)
        elif kind == "turn":
            turn = turns[current]
            turn.contents.append({"step": len(turn.contents), "content": record.get("text")})
            turn.rounds += 1 if record.get("tool_calls") else 0
        elif kind == "action":
            actions[record["action_id"]] = record
        elif kind == "observation" and record.get("action_id") in actions:
            action = actions[record["action_id"]]
            result = record.get("result")
            if result is None:
                result = (record.get("tool_result") or {}).get("data")
            turns[current].tools.append(
                {"function_name": action["name"], "function_args": action.get("arguments") or {}, "observation": result}
            )
    return turns


def _entry(task: VtbTask, answers: list[str], turns: list[_Turn]) -> dict[str, Any]:
    head = {
        "id": task.task_id,
        "task_id": task.task_id,
        "turncase": task.turncase,
        "eval_focus": task.eval_focus,
        "prompt_category": task.category,
    }
    per_turn = []
    for number, turn in enumerate(task.turns):
        played = turns[number] if number < len(turns) else _Turn()
        per_turn.append(
            {
                "turn_number": number,
                "prompt": turn.prompt,
                "image": str(turn.image) if turn.image else None,
                "model_answer": answers[number] if number < len(answers) else "",
                "golden_answer": turn.golden_answer,
                "rubrics": json.dumps({r.rubric_id: _rubric(r.to_dict()) for r in turn.rubrics}),
                "num_tool_calls": played.rounds,
                "tool_use_list": played.tools,
                "content_list": played.contents,
            }
        )
    if len(task.turns) == 1:
        only = {k: v for k, v in per_turn[0].items() if k != "turn_number"}
        return {**head, **only}
    return {**head, "turns": per_turn, "total_turns": len(per_turn)}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text) or "model"
