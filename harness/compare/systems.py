"""Scored runs read for a comparison, split into systems: one model in one mode on one suite.

A run directory may hold several systems (the demo scores ``gen`` and ``atm`` together); each
becomes its own column. Labels name the run (its folder, or the label given) and add the model,
mode or suite only where the run holds more than one, so they stay short and unique.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pixelbox.harness.scoring.columns import Column, metrics_of, primary_of, union_columns
from pixelbox.harness.scoring.report_tables import episode_href
from pixelbox.harness.scoring.run import REPORT_DIR, RunDirError, read_scores
from pixelbox.harness.scoring.runmeta import run_meta
from pixelbox.harness.suites import DEFAULT_SUITE


@dataclass(frozen=True)
class System:
    """One model in one mode on one suite, as a scored run shows it; ``episodes`` maps task id -> record."""

    label: str
    run: Path
    model: str
    mode: str
    suite: str
    meta: dict[str, str]
    columns: list[Column]
    primary: str
    episodes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def value(self, task_id: str, key: str) -> float | None:
        """The task's metric (None when absent, not applicable, or the episode failed for infrastructure)."""
        record = self.episodes.get(task_id)
        if record is None or record["score"].get("infrastructure"):
            return None
        return metrics_of(record["score"]).get(key)

    def infrastructure(self, task_id: str) -> bool:
        record = self.episodes.get(task_id)
        return bool(record and record["score"].get("infrastructure"))

    def page(self, task_id: str) -> Path | None:
        """The episode's page in the run's HTML report."""
        record = self.episodes.get(task_id)
        if record is None:
            return None
        return self.run / REPORT_DIR / episode_href(record["score"]["episode_id"])


def load_systems(runs: Sequence[str | Path], labels: Sequence[str] = ()) -> list[System]:
    """Every system of every scored run, in the order given (:class:`RunDirError` for a run not scored)."""
    if labels and len(labels) != len(runs):
        raise RunDirError(f"got {len(labels)} --label value(s) for {len(runs)} run(s); give one per run, in order")
    roots = [Path(r) for r in runs]
    names = list(labels) or _run_names(roots)
    systems: list[System] = []
    for root, name in zip(roots, names, strict=True):
        if not root.is_dir():
            raise RunDirError(f"{root} is not a directory; give run directories scored with `pixelbox score`")
        scores = read_scores(root)
        systems += _systems_of(root, name, scores)
    if not systems:
        raise RunDirError("the runs hold no scored episode; score them first with `pixelbox score RUN`")
    return systems


def _run_names(roots: list[Path]) -> list[str]:
    """Folder names, with parents added until they differ (``a/runs`` and ``b/runs``)."""
    depth = 1
    while True:
        names = ["/".join(r.resolve().parts[-depth:]) for r in roots]
        if len(set(names)) == len(names) or depth > 6:
            return names
        depth += 1


def _systems_of(root: Path, name: str, scores: dict[str, Any]) -> list[System]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in scores["episodes"]:
        score = record["score"]
        key = (str(score.get("model") or ""), str(score["mode"]), str(score.get("suite") or DEFAULT_SUITE))
        groups.setdefault(key, []).append(record)
    varies = [len({key[i] for key in groups}) > 1 for i in range(3)]
    systems = []
    for (model, mode, suite), records in groups.items():
        extra = [part for part, shown in zip((model, mode, suite), varies, strict=True) if shown]
        label = " · ".join([name, *extra])
        score_list = [r["score"] for r in records]
        systems.append(
            System(
                label=label,
                run=root,
                model=model,
                mode=mode,
                suite=suite,
                meta=run_meta(records, scores.get("judges") or []),
                columns=union_columns(score_list),
                primary=primary_of(score_list[0]),
                episodes={str(r["score"]["task_id"]): r for r in records},
            )
        )
    return systems
