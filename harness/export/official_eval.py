"""The official Agentic-MME evaluator's verdicts for one exported run folder, recomputed in our code.

This is our reading of ``evaluation/eval_runs_search.py`` + ``verifiers.py`` (the published
semantics, not their code), kept exact because people compare numbers with it. One run is scored
in checkpoint order with one set of *consumed* tool-entry indices shared by all checkpoints:

- **S** (search): if ``google_search`` is among the checkpoint's tools, every unconsumed
  ``google_search`` entry with a non-empty ``arguments.query`` goes to the search judge at once; on a
  pass the first of them is the hit and is consumed. Otherwise, with ``google_lens_search`` among
  the tools, the first unconsumed lens entry passes and is consumed. Any other S checkpoint fails.
- **V** with ``answer_check``: not scored (the final-answer placeholder; ``{"axis": "V"}`` only).
- **V** tool check (``code_check``): the verifier first (``verify_<x>_ast`` means ``require_op`` of
  the first primitive in its name; ``require_op`` takes the first matching entry, consumed or not;
  ``require_images[:N]`` counts files named ``transformed_image_<digits>.png`` and its hit is
  entry 0; ``require_metrics[:KEY]`` reads ``tool_images/metrics.json``), a passing hit is consumed;
  then the first unconsumed entry of the verifier's primitive (order crop, rotate, flip, resize,
  enhance); then the first unconsumed entry naming one of ``tools``.
- **V** visual check: every valid image file in ``tool_images/`` (any name), else the images the
  entries' outputs point at, else ``orig*.png``; passes when the judge's answer for any of them
  contains the expected answer (case-insensitive).
- **R** with ``answer_check``: the answer rules of ``check_answer``; its hit index is the entry count.
- Ordering: each constraint's checkpoints must all pass with a hit index, indices non-decreasing,
  gaps (``b - a - 1``) at most ``max_gap``.
- Efficiency: ``run_meta.effective_tool_calls`` (else the entry count) over the reference, times
  the per-call penalty, capped at 1; 1 when above ``max_tool_calls``.

Entries whose ``output.declared_only`` is set never count. The judges are callables so tests and the
``official`` semantics of ``pixelbox score`` can plug in theirs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

OFFICIAL_PRIMITIVES = ("crop", "rotate", "resize", "enhance", "flip")
"""The verifier-name order (``verify_<x>_ast`` maps to the first of these inside the name)."""
FALLBACK_ORDER = ("crop", "rotate", "flip", "resize", "enhance")
"""The order the evaluator looks for a primitive in a verifier when falling back to entries."""
TRANSFORMED_PNG = re.compile(r"^transformed_image_(\d+)\.png$", re.IGNORECASE)
"""What ``require_images`` counts (file name only; ``$`` also allows one trailing newline)."""
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")

VisualJudge = Callable[[str, Path], str]
"""(question, image) -> the judge's answer text."""
SearchJudge = Callable[[str, Sequence[str], Sequence[str]], bool]
"""(checkpoint description, the model's queries, their result contexts) -> passed."""


class OfficialEvaluatorError(RuntimeError):
    """The official evaluator itself fails on this input (it raises, so the run is left out)."""


CRASHING_VERIFIERS = frozenset(
    {"require_op", "require_transformed_images", "dispatch_verifier", "VerifyResult"}
    | {"auto_verifier_from_name", "read_json", "list_transformed_pngs", "_is_declared_only", "Path", "dataclass"}
)
"""Verifier names the official dispatcher calls as custom functions with arguments they do not take."""


@dataclass(frozen=True)
class ToolCheck:
    """A code_check's own outcome: passed, the entry index that decided it, and which rule matched."""

    passed: bool
    hit_index: int | None
    matched_by: str


@dataclass
class OfficialRun:
    """One run folder's official evaluation: per-checkpoint results, scores and efficiency."""

    checkpoint_results: dict[str, dict[str, Any]]
    hits: dict[str, int | None]
    ordering: list[dict[str, Any]]
    scores: dict[str, float | None]
    efficiency: dict[str, int]
    final_answer: dict[str, Any] = field(default_factory=dict)
    tool_checks: dict[str, ToolCheck] = field(default_factory=dict)


def transformed_pngs(folder: Path) -> list[Path]:
    """``transformed_image_<digits>.png`` files in ``folder`` by their number (what require_images counts)."""
    if not folder.exists():
        return []
    found = [p for p in folder.iterdir() if p.is_file() and TRANSFORMED_PNG.match(p.name)]
    return sorted(found, key=lambda p: int(TRANSFORMED_PNG.match(p.name).group(1)))  # type: ignore[union-attr]


def _skipped(entry: dict[str, Any]) -> bool:
    return bool((entry.get("output") or {}).get("declared_only"))


def _index(entry: dict[str, Any]) -> int:
    return int(entry.get("index", 0))


def _lower(value: Any) -> str:
    return (value or "").lower()


def _is_op(entry: dict[str, Any], op: str) -> bool:
    return _lower(entry.get("tool_name")) == op or _lower((entry.get("arguments") or {}).get("op")) == op


def entry_names(entry: dict[str, Any]) -> list[str]:
    """The names a ``tools`` list can match: tool_name, raw_tool_name, and arguments' tool_name, raw_tool_name, op."""
    arguments = entry.get("arguments") or {}
    raw = [entry.get("tool_name"), entry.get("raw_tool_name")]
    raw += [arguments.get("tool_name"), arguments.get("raw_tool_name"), arguments.get("op")]
    return [text.lower() for text in ((v or "").strip() for v in raw) if text]


def _first_unused(entries: list[dict[str, Any]], used: set[int], test: Callable[[dict[str, Any]], bool]) -> int | None:
    for entry in entries:
        if _index(entry) in used or _skipped(entry):
            continue
        if test(entry):
            return _index(entry)
    return None


def run_verifier(
    verifier: str, run_dir: Path, entries: list[dict[str, Any]]
) -> tuple[bool, int | None, dict[str, Any]]:
    """A ``code_check.verifier``'s (passed, hit index, detail) as ``dispatch_verifier`` gives them."""
    verifier = (verifier or "").strip()
    if not verifier:
        return True, None, {"note": "empty verifier passes"}
    mapped = next((p for p in OFFICIAL_PRIMITIVES if p in verifier.lower()), None)
    if mapped and verifier.startswith("verify_") and verifier.endswith("_ast"):
        verifier = f"require_op:{mapped}"
    if verifier == "example_custom_verifier":
        verifier = "require_op:crop"
    if verifier.startswith("require_op:"):
        op = verifier.split(":", 1)[1].lower().strip()
        hit = next((e for e in entries if not _skipped(e) and _is_op(e, op)), None)
        return (hit is not None, None if hit is None else _index(hit), {"op": op})
    if verifier.startswith("require_images"):
        parts = verifier.split(":")
        wanted = int(parts[1]) if len(parts) > 1 and parts[1].strip().isdigit() else 1
        count = len(transformed_pngs(run_dir / "tool_images"))
        return (count >= wanted, 0 if count >= wanted else None, {"count": count, "min_count": wanted})
    if verifier.startswith("require_metrics"):
        return _metrics(run_dir, verifier)
    if verifier in CRASHING_VERIFIERS:
        raise OfficialEvaluatorError(f"the official dispatcher cannot call verifier {verifier!r}")
    return False, None, {"reason": "unknown_verifier", "verifier": verifier}


def _metrics(run_dir: Path, verifier: str) -> tuple[bool, int | None, dict[str, Any]]:
    parts = verifier.split(":")
    key = parts[1].strip() if len(parts) > 1 and parts[1].strip() else None
    path = run_dir / "tool_images" / "metrics.json"
    if not path.exists():
        return False, None, {"reason": "metrics.json_missing"}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except Exception as error:  # the official reader fails the check on any read error
        return False, None, {"reason": "metrics.json_invalid", "error": str(error)}
    if key and key not in data:
        return False, None, {"reason": "metrics.json_missing_key", "key": key}
    return True, 0, {"metrics_keys": list(data)}


def _valid_image(path: Path) -> bool:
    try:
        from PIL import Image

        with Image.open(path) as image:
            image.verify()
        return True
    except Exception:
        return False


def visual_candidates(run_dir: Path, entries: list[dict[str, Any]]) -> list[Path]:
    """The images a visual check asks the judge about, in the evaluator's order of preference."""
    folder = run_dir / "tool_images"
    found: list[Path] = []
    if folder.exists():
        found = [p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and _valid_image(p)]
    if not found:
        for entry in entries:
            if _skipped(entry):
                continue
            output = entry.get("output") or {}
            for key in ("output_path", "saved_path", "image_path"):
                path = Path(output.get(key) or "") if output.get(key) else None
                if path is not None and path.exists() and _valid_image(path):
                    found.append(path)
                    break
    if not found:
        orig = run_dir / "orig.png"
        if not orig.exists():
            others = list(run_dir.glob("orig*.png"))
            orig = others[0] if others else orig
        if orig.exists():
            found.append(orig)
    return found


def check_answer_rule(check: dict[str, Any], answer: str) -> bool:
    """An R checkpoint's ``answer_check`` against the model's answer (the evaluator's match rules)."""
    kind = check.get("match_type", "exact")
    text = (answer or "").strip()
    low = text.lower()
    if kind in ("exact", "exact_match"):
        return text == check.get("target", "")
    if kind == "contains":
        return check.get("target", "") in text
    if kind == "string":
        target = check.get("target", "").lower()
        return target in low or low in target
    if kind == "numeric":
        try:
            return abs(float(text) - float(check.get("target", "0"))) <= float(check.get("tolerance", 0.0))
        except Exception:
            return False
    if kind == "keyword_inclusion":
        words = check.get("keywords", [])
        return sum(1 for w in words if w.lower() in low) >= int(check.get("min_matches", 1))
    if kind == "extraction_match":
        return _extraction(check.get("targets", []), text)
    target = check.get("target", "")
    return bool(target) and target.lower() in low


def _extraction(targets: list[dict[str, Any]], text: str) -> bool:
    """Every target's number within its tolerance of some number in the text (a bad tolerance raises)."""
    if not targets:
        return False
    numbers = re.findall(r"[\d.]+", text)
    matched = True
    for target in targets:
        tolerance = float(target.get("tolerance", 0.0))
        try:
            want = float(target.get("value", ""))
        except Exception:
            matched = False
            continue
        if not any(_near(n, want, tolerance) for n in numbers):
            matched = False
    return matched


def _near(text: str, want: float, tolerance: float) -> bool:
    try:
        return abs(float(text) - want) <= tolerance
    except ValueError:
        return False


_FINAL_PATTERNS = (
    r"therefore[,\s]+(?:the\s+)?answer\s+is\s+([^\.\n]+)",
    r"(?:the\s+)?answer\s+is\s+([^\.\n]+)",
    r"answer:\s*([^\.\n]+)",
    r"final\s+answer:\s*([^\.\n]+)",
)


def final_answer(task: dict[str, Any], answer: str) -> dict[str, Any]:
    """The evaluator's ``final_answer_accuracy`` record for a model answer (golden_answer rules)."""
    golden = task.get("golden_answer") or {}
    value = str(golden.get("value", "")).strip()
    kind = golden.get("match_type", "contains")
    tolerance = float(golden.get("tolerance", 0.0))
    text = (answer or "").strip()
    if kind == "exact":
        correct = text == value
    elif kind == "contains":
        correct = _contains(value, text)
    elif kind == "numeric":
        try:
            correct = abs(float(text) - float(value)) <= tolerance
        except Exception:
            correct = False
    else:
        correct = value.lower() in text.lower()
    return {"correct": correct, "model_answer": text, "golden_answer": value, "match_type": kind}


def _contains(value: str, text: str) -> bool:
    numeric = value.replace(".", "").replace("-", "").replace("+", "").isdigit()
    if not (numeric and len(value) <= 2):
        return value.lower() in text.lower()
    bounded = r"\b" + re.escape(value) + r"\b"
    for pattern in _FINAL_PATTERNS:
        match = re.search(pattern, text.lower())
        if match and re.search(bounded, match.group(1)):
            return True
    return bool(re.search(bounded, text))


class _Scorer:
    """One run's checkpoint pass: the consumed entry set is shared by every checkpoint in order."""

    def __init__(
        self, run_dir: Path, entries: list[dict[str, Any]], visual: VisualJudge, search: SearchJudge | None
    ) -> None:
        self.run_dir, self.entries, self.visual, self.search = run_dir, entries, visual, search
        self.used: set[int] = set()
        self.tool_checks: dict[str, ToolCheck] = {}

    def search_checkpoint(self, cp: dict[str, Any]) -> tuple[bool, int | None, dict[str, Any]]:
        tools = {str(t).lower() for t in cp.get("tools") or []}
        if "google_search" in tools:
            return self._google_search(cp)
        if "google_lens_search" in tools:
            hit = _first_unused(self.entries, self.used, lambda e: _lower(e.get("tool_name")) == "google_lens_search")
            if hit is None:
                return False, None, {}
            self.used.add(hit)
            return True, hit, {"tool_hit_index": hit, "matched_by": "google_lens_search"}
        return False, None, {"error": "S-axis checkpoint must be search-related (google_search or google_lens_search)"}

    def _google_search(self, cp: dict[str, Any]) -> tuple[bool, int | None, dict[str, Any]]:
        queries, contexts, indices = [], [], []
        for entry in self.entries:
            if _skipped(entry) or _lower(entry.get("tool_name")) != "google_search" or _index(entry) in self.used:
                continue
            query = (entry.get("arguments") or {}).get("query", "")
            if query:
                queries.append(query)
                contexts.append((entry.get("output") or {}).get("context", ""))
                indices.append(_index(entry))
        if not queries or self.search is None:
            return False, None, {}
        passed = self.search(cp.get("description", ""), queries, contexts)
        if not passed:
            return False, None, {"search_check": {"passed": False, "queries_evaluated": queries}}
        self.used.add(indices[0])
        return True, indices[0], {"search_check": {"passed": True, "queries_evaluated": queries}}

    def tool_check(self, cp: dict[str, Any]) -> tuple[bool, int | None, dict[str, Any]]:
        verifier = (cp.get("code_check") or {}).get("verifier", "") or ""
        op = next((p for p in FALLBACK_ORDER if p in verifier.lower()), None)
        passed, hit, _detail = run_verifier(verifier, self.run_dir, self.entries)
        if passed:
            if hit is not None:
                self.used.add(hit)
            return (
                True,
                hit,
                {"code_check": {"verifier": verifier, "verifier_op": op, "passed": True, "hit_index": hit}},
            )
        if op is not None:
            hit = _first_unused(self.entries, self.used, lambda e: _is_op(e, op))
            if hit is not None:
                self.used.add(hit)
                return True, hit, {"op_hit_index": hit, "matched_by": "verifier_op"}
        tools = {str(t).lower() for t in cp.get("tools") or []}
        if tools:
            hit = _first_unused(self.entries, self.used, lambda e: any(n in tools for n in entry_names(e)))
            if hit is not None:
                self.used.add(hit)
                return True, hit, {"tool_hit_index": hit, "matched_by": "tools_list"}
        return False, None, {}

    def visual_check(self, check: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        images = visual_candidates(self.run_dir, self.entries)
        if not images:
            return False, {"visual_check": {"error": "No images found for visual check", "passed": False}}
        expected = str(check["expected_answer"]).strip().lower()
        asked = []
        for image in images:
            answer = self.visual(check["question"], image)
            ok = expected in answer.strip().lower()
            asked.append({"image": image.name, "judge_answer": answer, "passed": ok})
            if ok:
                return True, {"visual_check": {"passed": True, "judge_results": asked}}
        return False, {"visual_check": {"passed": False, "judge_results": asked}}

    def visual_checkpoint(self, cp: dict[str, Any]) -> tuple[bool, int | None, dict[str, Any]]:
        extra: dict[str, Any] = {}
        tool_ok = visual_ok = False
        hit = None
        if "code_check" in cp:
            tool_ok, hit, more = self.tool_check(cp)
            self.tool_checks[str(cp["id"])] = ToolCheck(tool_ok, hit, str(more.get("matched_by") or "verifier"))
            extra.update(more)
        if "visual_check" in cp:
            visual_ok, more = self.visual_check(cp["visual_check"])
            extra.update(more)
        if "code_check" in cp and "visual_check" in cp:
            return tool_ok and visual_ok, hit, extra
        if "code_check" in cp:
            return tool_ok, hit, extra
        if "visual_check" in cp:
            return visual_ok, hit, extra
        return False, hit, {"error": "V-axis checkpoint must have code_check or visual_check"}


def evaluate_run(
    task: dict[str, Any],
    run_dir: Path,
    run_meta: dict[str, Any],
    answer: str,
    entries: list[dict[str, Any]],
    visual: VisualJudge,
    search: SearchJudge | None,
) -> OfficialRun:
    """The official process evaluation of one run folder (see the module docstring)."""
    process = task.get("process_evaluation") or {}
    checkpoints = process.get("checkpoints") or []
    scorer = _Scorer(run_dir, entries, visual, search)
    results: dict[str, dict[str, Any]] = {}
    hits: dict[str, int | None] = {}
    for cp in checkpoints:
        cid, axis = cp["id"], cp["axis"]
        if axis == "V" and "answer_check" in cp:
            results[cid], hits[cid] = {"axis": axis}, None
            continue
        if axis == "S":
            passed, hit, extra = scorer.search_checkpoint(cp)
        elif axis == "V":
            passed, hit, extra = scorer.visual_checkpoint(cp)
        elif axis == "R" and "answer_check" in cp:
            passed, hit, extra = check_answer_rule(cp["answer_check"], answer), len(entries), {}
        elif axis == "R":
            results[cid], hits[cid] = {"axis": axis, "passed": False, "error": "Unknown R checkpoint type"}, None
            continue
        else:
            results[cid], hits[cid] = {"axis": axis, "passed": False, "error": f"Unknown axis {axis}"}, None
            continue
        hits[cid] = hit
        results[cid] = {"axis": axis, "passed": bool(passed), "hit_index": hit, **extra}
    ordering = [ordering_verdict(oc, results, hits) for oc in process.get("ordering_constraints") or []]
    scores, efficiency = _scores(checkpoints, results, ordering, process.get("efficiency") or {}, run_meta, entries)
    return OfficialRun(results, hits, ordering, scores, efficiency, final_answer(task, answer), scorer.tool_checks)


def ordering_verdict(
    constraint: dict[str, Any], results: dict[str, Any], hits: dict[str, int | None]
) -> dict[str, Any]:
    max_gap = int(constraint.get("max_gap", 0))
    indices: list[int] = []
    ok = True
    for cid in constraint["sequence"]:
        hit = hits.get(cid)
        if not results.get(cid, {}).get("passed", False) or hit is None:
            ok = False
            break
        indices.append(int(hit))
    if ok:
        ok = all(b >= a and b - a - 1 <= max_gap for a, b in pairwise(indices))
    return {"id": constraint.get("id", ""), "passed": ok, "indices": indices, "max_gap": max_gap}


def _scores(
    checkpoints: list[dict[str, Any]],
    results: dict[str, dict[str, Any]],
    ordering: list[dict[str, Any]],
    efficiency: dict[str, Any],
    run_meta: dict[str, Any],
    entries: list[dict[str, Any]],
) -> tuple[dict[str, float | None], dict[str, int]]:
    s_ids = [cp["id"] for cp in checkpoints if cp["axis"] == "S"]
    v_ids = [cp["id"] for cp in checkpoints if cp["axis"] == "V" and "answer_check" not in cp]
    s = sum(1 for c in s_ids if results[c]["passed"]) / len(s_ids) if s_ids else None
    v = sum(1 for c in v_ids if results[c]["passed"]) / len(v_ids) if v_ids else None
    r = sum(1 for o in ordering if o["passed"]) / len(ordering) if ordering else 1.0
    reference = int(efficiency.get("reference_tool_calls", 0))
    per_call = float(efficiency.get("penalty_per_extra_call", 0.0))
    cap = int(efficiency.get("max_tool_calls", 0) or 0)
    calls = int(run_meta.get("effective_tool_calls", len(entries)))
    excess = max(0, calls - reference)
    penalty = 1.0 if cap > 0 and calls > cap else min(1.0, excess * per_call)
    present = [x for x in (s, v) if x is not None]
    base = sum(present) / len(present) if present else 0.0
    scores = {"S": s, "V": v, "R": r, "base": base, "penalty": penalty, "PQS": base * (1.0 - penalty)}
    return scores, {"effective_tool_calls": calls, "reference_tool_calls": reference, "excess_calls": excess}
