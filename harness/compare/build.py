"""What a comparison computes, per suite: each system's aggregate metrics, its primary metric per category
and level, a per-task grid of outcomes, and paired bootstrap intervals on the difference between each
pair of systems over the tasks both have a value for. Across suites: the primary metric of each model
(and mode) in each suite, side by side.

Infrastructure failures are kept apart everywhere: they are not failures of the model, count in their
own column, show as ``infra`` in the grid and leave their task out of the paired differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

from pixelbox.harness.scoring.columns import Column, merge_columns
from pixelbox.harness.scoring.report import level_label, mean_of

from .stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, paired_bootstrap
from .systems import System


def build_comparison(
    systems: Sequence[System],
    *,
    metric: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """The comparison as plain data (``compare.json``); ``metric`` overrides each suite's primary metric."""
    suites = list(dict.fromkeys(s.suite for s in systems))
    per_suite = []
    for suite in suites:
        members = [s for s in systems if s.suite == suite]
        key = metric or members[0].primary
        columns = merge_columns(s.columns for s in members)
        if key not in {c.key for c in columns}:
            known = ", ".join(c.key for c in columns)
            raise ValueError(f"suite {suite} has no metric {key!r}; its metrics are {known}")
        per_suite.append(_suite(suite, members, key, columns, (resamples, seed, confidence)))
    return {
        "systems": [_system_view(s) for s in systems],
        "suites": per_suite,
        "across_suites": _across(systems, per_suite) if len(suites) > 1 else None,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": confidence},
    }


def _system_view(system: System) -> dict[str, Any]:
    return {
        "label": system.label,
        "run": str(system.run),
        "model": system.model,
        "mode": system.mode,
        "suite": system.suite,
        "meta": system.meta,
        "episodes": len(system.episodes),
    }


def _suite(
    suite: str, members: list[System], key: str, columns: list[Column], bootstrap: tuple[int, int, float]
) -> dict[str, Any]:
    tasks = sorted({t for s in members for t in s.episodes})
    metric = next(c for c in columns if c.key == key)
    return {
        "suite": suite,
        "metric": key,
        "metric_label": metric.label,
        "metric_column": metric.to_dict(),
        "columns": [c.to_dict() for c in columns],
        "aggregate": [_aggregate(s, columns) for s in members],
        "categories": _grouped(members, key, lambda s, t: _field(s, t, "category")),
        "levels": _grouped(members, key, lambda s, t: level_label(s.episodes[t]["score"])),
        "grid": [_grid_row(members, task, metric) for task in tasks],
        "pairs": _pairs(members, tasks, key, bootstrap),
    }


def _aggregate(system: System, columns: list[Column]) -> dict[str, Any]:
    counted = [t for t in system.episodes if not system.infrastructure(t)]
    infra = len(system.episodes) - len(counted)
    row: dict[str, Any] = {"system": system.label, "n": len(counted), "infrastructure": infra}
    for column in columns:
        row[column.key] = mean_of([system.value(t, column.key) for t in counted])
    return row


def _field(system: System, task: str, name: str) -> str | None:
    value = system.episodes[task]["score"].get(name)
    return str(value) if value else None


def _grouped(members: list[System], key: str, group_of: Any) -> dict[str, Any]:
    """Group -> system label -> mean of ``key`` (over the system's episodes in that group)."""
    groups: dict[str, dict[str, list[float | None]]] = {}
    for system in members:
        for task in system.episodes:
            group = group_of(system, task)
            if group is not None:
                groups.setdefault(group, {}).setdefault(system.label, []).append(system.value(task, key))
    return {g: {label: mean_of(values) for label, values in by.items()} for g, by in sorted(groups.items())}


def _grid_row(members: list[System], task: str, metric: Column) -> dict[str, Any]:
    cells = {}
    for system in members:
        page = system.page(task)
        if task not in system.episodes:
            state, value = "missing", None
        elif system.infrastructure(task):
            state, value = "infra", None
        else:
            value = system.value(task, metric.key)
            state = "na" if value is None else "value" if metric.kind != "rate" else _verdict_state(value)
        cells[system.label] = {"state": state, "value": value, "page": str(page) if page else None}
    values = {c["value"] for c in cells.values() if c["value"] is not None}
    category = next((_field(s, task, "category") for s in members if task in s.episodes), None)
    return {"task_id": task, "category": category, "differs": len(values) > 1, "cells": cells}


def _verdict_state(rate: float) -> str:
    return "pass" if rate == 1 else "fail" if rate == 0 else "partial"


def _pairs(
    members: list[System], tasks: list[str], key: str, bootstrap: tuple[int, int, float]
) -> list[dict[str, Any]]:
    resamples, seed, confidence = bootstrap
    out = []
    for a, b in combinations(members, 2):
        shared = [t for t in tasks if a.value(t, key) is not None and b.value(t, key) is not None]
        row: dict[str, Any] = {"a": a.label, "b": b.label, "tasks": len(shared)}
        if shared:
            va, vb = [a.value(t, key) or 0.0 for t in shared], [b.value(t, key) or 0.0 for t in shared]
            result = paired_bootstrap(va, vb, resamples=resamples, seed=seed, confidence=confidence)
            row.update(result.to_dict())
            row["a_better"] = sum(1 for x, y in zip(va, vb, strict=True) if x > y)
            row["b_better"] = sum(1 for x, y in zip(va, vb, strict=True) if y > x)
        out.append(row)
    return out


def _across(systems: Sequence[System], per_suite: list[dict[str, Any]]) -> dict[str, Any]:
    """Model (and mode) -> suite -> the primary metric: the same model side by side across suites."""
    rows: dict[str, dict[str, Any]] = {}
    for suite in per_suite:
        for aggregate in suite["aggregate"]:
            system = next(s for s in systems if s.label == aggregate["system"])
            name = f"{system.model} · {system.mode}"
            rows.setdefault(name, {})[suite["suite"]] = {
                "value": aggregate.get(suite["metric"]),
                "metric": suite["metric_label"],
                "n": aggregate["n"],
                "infrastructure": aggregate["infrastructure"],
                "system": system.label,
            }
    return {"suites": [s["suite"] for s in per_suite], "models": rows}
