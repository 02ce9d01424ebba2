"""Derive the official evaluator's verdicts for generated runs by running the official Agentic-MME code.

    /work/oracles/venv-amme/bin/python scripts/official_eval_cases.py --oracle /work/oracles/Agentic-MME

The official repository is a read-only oracle (clone it yourself; nothing of it is copied here). This
script generates run folders (a task's checkpoints, a tool_use_list, the names and validity of the
files in tool_images/, a model answer, run_meta), has the official ``eval_process`` and
``check_final_answer_only`` score each one with deterministic stand-in judges, and writes the cases
with their outcomes to ``tests/scoring/official_eval_cases.json``, which
``tests/scoring/test_official_eval.py`` holds ``harness/export/official_eval.py`` to.

Stand-in judges (the test uses the same): the visual judge answers "Yes, clearly" for an image whose
file name contains ``good`` and "No" otherwise; the search judge passes when a query contains
``PASSME``. The seed makes the file reproducible.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "scoring" / "official_eval_cases.json"
SEED = 14
COUNT = 260

TOOL_NAMES = [
    "crop",
    "rotate",
    "resize",
    "enhance",
    "flip",
    "google_search",
    "google_lens_search",
    "fetch_webpage",
    "run_visual_processing_code",
    "python_image_processing",
    "Crop",
    "calculator",
]
OPS = ["crop", "rotate", "resize", "enhance", "flip", "CROP", "", "zoom"]
VERIFIERS = [
    "verify_crop_ast",
    "verify_rotate_image_ast",
    "verify_flip_ast",
    "verify_resize_ast",
    "verify_enhance_ast",
    "verify_crop_and_rotate_ast",
    "verify_flip_then_crop_ast",
    "require_op:crop",
    "require_op: Rotate",
    "require_op:flip",
    "require_images",
    "require_images:2",
    "require_images:3",
    "require_images:x",
    "require_metrics",
    "require_metrics:score",
    "",
    "  ",
    "crop_check",
    "Verify_crop_ast",
    "verify_crop",
    "example_custom_verifier",
    "unknown_thing",
    "verify_zoom_ast",
    "enhance",
    " verify_resize_ast ",
]
FILES = [
    "transformed_image_1.png",
    "transformed_image_2.png",
    "transformed_image_10.png",
    "Transformed_Image_3.PNG",
    "transformed_image_.png",
    "transformed_image_1.jpg",
    "transformed_image_01.png",
    "crop_good_1.png",
    "transformed_image_2.png.bak",
    "good_view.jpg",
    "transformed_image_4_good.png",
    "notes.txt",
    "x_good.jpeg",
    "transformed_image_7.png",
]


def _entry(rng: random.Random, index: int) -> dict[str, Any]:
    name = rng.choice(TOOL_NAMES)
    arguments: dict[str, Any] = {}
    if name == "python_image_processing" or rng.random() < 0.2:
        arguments["op"] = rng.choice(OPS)
    if name == "google_search" and rng.random() < 0.9:
        arguments["query"] = rng.choice(["what is this", "PASSME landmark", "", "PASSME", "unrelated"])
    if rng.random() < 0.1:
        arguments["tool_name"] = rng.choice(["crop", "google_lens_search", "flip"])
    entry: dict[str, Any] = {"index": index, "tool_name": name, "arguments": arguments}
    if rng.random() < 0.3:
        entry["raw_tool_name"] = rng.choice(["python_image_processing", "zoom_in", "crop ", " Flip"])
    output: dict[str, Any] = {}
    if rng.random() < 0.1:
        output["declared_only"] = True
    if name == "google_search":
        output["context"] = rng.choice(["result text", "nothing"])
    if rng.random() < 0.3:
        output["output_path"] = "{RUN}/tool_images/" + rng.choice([*FILES, "missing.png"])
    entry["output"] = output
    return entry


def _checkpoint(rng: random.Random, cid: str) -> dict[str, Any]:
    kind = rng.choice(["S_search", "S_lens", "S_both", "S_other", "V_code", "V_code", "V_code", "V_visual", "V_both"])
    kind = rng.choice([kind, kind, "V_answer", "R_answer", "R_plain"]) if rng.random() < 0.15 else kind
    tools = rng.sample(
        ["crop", "rotate", "flip", "google_lens_search", "zoom_in", "Crop", "python_image_processing"], 2
    )
    if kind.startswith("S"):
        axis_tools = {
            "S_search": ["google_search"],
            "S_lens": ["google_lens_search"],
            "S_both": ["google_lens_search", "Google_Search"],
            "S_other": ["fetch_webpage"],
        }[kind]
        return {"id": cid, "axis": "S", "tools": axis_tools, "description": "find the name"}
    if kind == "V_answer":
        return {"id": cid, "axis": "V", "answer_check": {"match_type": "contains", "target": "7"}}
    if kind == "R_answer":
        return {"id": cid, "axis": "R", "answer_check": rng.choice(_answer_checks())}
    if kind == "R_plain":
        return {"id": cid, "axis": "R"}
    cp: dict[str, Any] = {"id": cid, "axis": "V"}
    if rng.random() < 0.8:
        cp["tools"] = tools if rng.random() < 0.8 else []
    if kind in ("V_code", "V_both"):
        cp["code_check"] = {"verifier": rng.choice(VERIFIERS)} if rng.random() < 0.95 else None
    if kind in ("V_visual", "V_both"):
        cp["visual_check"] = {
            "question": "Is it readable?",
            "expected_answer": rng.choice(["Yes", "yes ", "No", "clearly"]),
        }
    return cp


def _answer_checks() -> list[dict[str, Any]]:
    return [
        {"match_type": "exact", "target": "7"},
        {"match_type": "contains", "target": "seven"},
        {"match_type": "string", "target": "The Seven"},
        {"match_type": "numeric", "target": "7", "tolerance": 0.5},
        {"match_type": "keyword_inclusion", "keywords": ["seven", "7"], "min_matches": 2},
        {"match_type": "extraction_match", "targets": [{"key": "n", "value": "7", "tolerance": 0}]},
        {"match_type": "extraction_match", "targets": [{"key": "n", "value": "x"}, {"key": "m", "value": "7"}]},
        {"match_type": "fuzzy", "target": "Seven"},
        {"match_type": "fuzzy"},
    ]


GOLDEN = [
    {"value": "7", "match_type": "contains"},
    {"value": 7, "match_type": "contains"},
    {"value": "12", "match_type": "contains"},
    {"value": "1.5", "match_type": "contains"},
    {"value": "Seven", "match_type": "exact"},
    {"value": "7", "match_type": "numeric", "tolerance": "0"},
    {"value": "7.2", "match_type": "numeric", "tolerance": 0.5},
    {"value": "seven", "match_type": "mystery"},
    {"value": "seven"},
    None,
]
ANSWERS = ["7", "The answer is 7.", "2017", "seven", "Seven", "answer: 12 apples", "1.5 m", "7.4", "", "No idea; 17"]


def generate(rng: random.Random) -> dict[str, Any]:
    """One generated run: task, entries, tool_images files, answer and run_meta."""
    n_entries = rng.randint(0, 9)
    entries = [_entry(rng, i) for i in range(n_entries)]
    if entries and rng.random() < 0.1:
        entries[-1]["index"] = entries[0]["index"]
    if entries and rng.random() < 0.1:
        entries.reverse()
    checkpoints = [_checkpoint(rng, f"C{i}") for i in range(rng.randint(1, 6))]
    ids = [cp["id"] for cp in checkpoints]
    ordering = []
    for k in range(rng.randint(0, 2)):
        seq = rng.sample(ids, min(len(ids), rng.randint(1, 3)))
        constraint: dict[str, Any] = {"id": f"O{k}", "sequence": seq}
        if rng.random() < 0.8:
            constraint["max_gap"] = rng.choice([0, 1, 2, 5])
        ordering.append(constraint)
    efficiency = rng.choice(
        [
            {},
            {"reference_tool_calls": 2, "penalty_per_extra_call": 0.1},
            {"reference_tool_calls": 1, "penalty_per_extra_call": 0.25, "max_tool_calls": 4},
            {"reference_tool_calls": 3, "penalty_per_extra_call": 0.05, "max_tool_calls": 0},
        ]
    )
    task: dict[str, Any] = {
        "process_evaluation": {"checkpoints": checkpoints, "ordering_constraints": ordering, "efficiency": efficiency}
    }
    golden = rng.choice(GOLDEN)
    if golden is not None:
        task["golden_answer"] = golden
    files = [{"name": n, "valid": rng.random() < 0.85} for n in rng.sample(FILES, rng.randint(0, 5))]
    if rng.random() < 0.1:
        files.append({"name": "metrics.json", "content": rng.choice(['{"score": 1}', '{"other": 2}', "not json"])})
    run_meta: dict[str, Any] = {}
    if rng.random() < 0.7:
        run_meta["effective_tool_calls"] = rng.randint(0, 8)
    return {
        "task": task,
        "entries": entries,
        "files": files,
        "orig": rng.random() < 0.5,
        "answer": rng.choice(ANSWERS),
        "run_meta": run_meta,
    }


def materialize(case: dict[str, Any], run_dir: Path) -> list[dict[str, Any]]:
    """Write the case's files under ``run_dir``; return its entries with ``{RUN}`` filled in."""
    from PIL import Image

    images = run_dir / "tool_images"
    images.mkdir(parents=True)
    for spec in case["files"]:
        path = images / spec["name"]
        if "content" in spec:
            path.write_text(spec["content"], encoding="utf-8")
        elif spec["valid"] and path.suffix.lower() in (".png", ".jpg", ".jpeg"):
            Image.new("RGB", (4, 4), "white").save(path, format="PNG")
        else:
            path.write_bytes(b"not an image")
    if case["orig"]:
        Image.new("RGB", (4, 4), "white").save(run_dir / "orig.png", format="PNG")
    text = json.dumps(case["entries"]).replace("{RUN}", str(run_dir))
    return json.loads(text)


def visual_judge(question: str, image: Path) -> str:
    """The stand-in visual judge."""
    return "Yes, clearly" if "good" in image.name else "No"


class _Client:
    """A stand-in OpenAI client whose search judge passes when a query contains PASSME."""

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    @staticmethod
    def _create(**kwargs: Any) -> Any:
        prompt = kwargs["messages"][0]["content"]
        queries = prompt.split("**Model's Actual Search Queries:**", 1)[1].split("**Search Results Summary:**", 1)[0]
        verdict = "VERDICT: PASS" if "PASSME" in queries else "VERDICT: FAIL"
        message = SimpleNamespace(content=verdict + "\nREASONING: stand-in")
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def official_outcome(module: Any, case: dict[str, Any]) -> dict[str, Any]:
    """What the official evaluator says about one case."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "0001"
        entries = materialize(case, run_dir)
        try:
            ev = module.eval_process(
                case["task"], run_dir, case["run_meta"], case["answer"], entries, visual_judge, client=_Client()
            )
        except Exception as error:
            return {"error": type(error).__name__}
        final = module.check_final_answer_only(case["task"], case["answer"])
    with_code = {
        cp["id"] for cp in case["task"]["process_evaluation"]["checkpoints"] if cp["axis"] == "V" and "code_check" in cp
    }
    checkpoints = {}
    for cid, result in ev["checkpoint_results"].items():
        row = {"passed": result.get("passed"), "hit_index": result.get("hit_index"), "keys": len(result)}
        if cid in with_code and "answer_check" not in result and "passed" in result:
            row["tool_passed"] = "code_check" in result or "matched_by" in result
        checkpoints[cid] = row
    return {"checkpoints": checkpoints, "scores": ev["scores"], "efficiency": ev["efficiency"], "final_answer": final}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", type=Path, required=True, help="a clone of ChoS3nE11ven/Agentic-MME")
    args = parser.parse_args()
    sys.path.insert(0, str(args.oracle))
    sys.path.insert(0, str(args.oracle / "evaluation"))
    import eval_runs_search  # the oracle's module, found through --oracle

    rng = random.Random(SEED)
    cases = []
    for _ in range(COUNT):
        case = generate(rng)
        case["official"] = official_outcome(eval_runs_search, case)
        cases.append(case)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"seed": SEED, "cases": cases}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
