"""Run-level entry points for the CLI: ``score_run`` (judges every episode) and ``write_report``.

``score_run`` writes ``RUN_DIR/scores.json``: the summary, and per episode its score and a
record of the episode itself, so ``write_report`` needs nothing else (no traces, no judges).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .episode import EpisodeView, episode_to_dict
from .judges import JudgeCache, build_judges, parse_endpoint
from .judges.chat import ChatEndpoint
from .report import summarize, to_markdown
from .score import score_episode

SCORES_FILE = "scores.json"
CACHE_DIR = "judge_cache"
REPORT_DIR = "report"


class RunDirError(ValueError):
    """The run directory lacks what scoring or reporting needs; the message says what to run first."""


def score_run(
    run_dir: str | Path, judges: Sequence[str], episodes: Sequence[EpisodeView] | None = None, progress: bool = True
) -> dict[str, Any]:
    """Score every episode of a run with the given ``--judge`` specs; writes and returns ``scores.json``.

    ``episodes`` defaults to the harness traces found in ``run_dir``. The first ``openai:`` judge
    also judges search checkpoints. Judge answers are cached in ``run_dir/judge_cache``.
    """
    root = Path(run_dir)
    views = list(episodes) if episodes is not None else load_episodes(root)
    cache = JudgeCache(root / CACHE_DIR)
    built = build_judges(list(judges), root / CACHE_DIR)
    search_endpoint = _search_endpoint(judges)
    records = []
    for view in tqdm(views, desc="judging episodes", unit="episode", disable=not progress):
        score = score_episode(view, built, search_endpoint, cache)
        records.append({"score": score.to_dict(), "episode": episode_to_dict(view)})
    result = {
        "run_dir": str(root),
        "judges": list(judges),
        "summary": summarize([r["score"] for r in records]),
        "episodes": records,
    }
    (root / SCORES_FILE).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return result


def write_report(run_dir: str | Path) -> dict[str, str]:
    """Write ``report.json``, ``report.md`` and the HTML report from ``scores.json``; returns their paths."""
    from .html import write_html

    root = Path(run_dir)
    scores_path = root / SCORES_FILE
    if not scores_path.is_file():
        raise RunDirError(f"{scores_path} does not exist; run `pixelbox score {root}` first")
    scores = json.loads(scores_path.read_text(encoding="utf-8"))
    summary = summarize([r["score"] for r in scores["episodes"]])
    report_json = root / "report.json"
    report_json.write_text(json.dumps({"judges": scores["judges"], **summary}, indent=1), encoding="utf-8")
    report_md = root / "report.md"
    report_md.write_text(to_markdown(summary), encoding="utf-8")
    index = write_html(root / REPORT_DIR, summary, scores["episodes"])
    return {"json": str(report_json), "markdown": str(report_md), "html": str(index)}


def load_episodes(run_dir: Path) -> list[EpisodeView]:
    """Every episode traced under ``run_dir`` (through ``episode_from_trace``)."""
    from .from_trace import episode_from_trace, find_traces

    traces = find_traces(run_dir)
    if not traces:
        raise RunDirError(f"no episode traces under {run_dir}; is this a `pixelbox run` output directory?")
    return [episode_from_trace(path) for path in traces]


def _search_endpoint(judges: Sequence[str]) -> ChatEndpoint | None:
    spec = next((j for j in judges if j.startswith("openai:")), None)
    return parse_endpoint(spec) if spec else None
