"""The README's and docs/security.md's hardening table, from a whole-suite run's per-case figures.

Run the suite with ``PIXELBOX_HARDENING_REPORT=benchmarks/results/hardening.json``, then
``python benchmarks/hardening_table.py [benchmarks/results/hardening.json]``: one row per
category (the modules of ``tests/hardening``), with the case x backend runs on each backend.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

CATEGORIES = {
    "test_egress.py": "egress",
    "test_host_access.py": "host access",
    "test_neighbours.py": "host access",
    "test_ipc_neighbours.py": "host access",
    "test_resources.py": "resources",
    "test_kernel_faults.py": "kernel faults",
    "test_policy_escapes.py": "policy escapes",
    "test_policy_reach.py": "policy escapes",
    "test_tracer_tamper.py": "tracer tampering",
    "test_evidence_forgery.py": "evidence forgery",
    "test_forged_marker.py": "evidence forgery",
    "test_self_exclusion.py": "self-exclusion from the score",
    "test_host_trust.py": "host trust",
    "test_planted_code.py": "host trust",
    "test_lifecycle_faults.py": "lifecycle / cleanup",
    "test_harness_faults.py": "harness faults",
}
"""Module -> category, in the table's order (a module not listed is its own category)."""

BACKENDS = ("local", "local-os", "local-cold", "runc", "runsc")
"""local-cold: the local backend started cold (no zygote fork), where a case checks both paths."""
COLUMNS = (
    "category",
    "distinct cases",
    "case x backend runs",
    *(f"on {name}" for name in BACKENDS),
    "contained / as expected",
    "known gaps",
    "not as expected",
    "executions",
    "executions that lost state (reported)",
)


def split_backend(nodeid: str, backend: str | None) -> tuple[str, str | None]:
    """The case without its backend, and the backend: ``test_x[runc-deleted]`` -> ``test_x[deleted]``."""
    found = re.fullmatch(r"(.*?)(?:\[(.*)\])?", nodeid)
    assert found is not None
    base, params = found.group(1), (found.group(2) or "").split("-")
    for name in sorted({backend, *BACKENDS} - {None}, key=len, reverse=True):
        parts = str(name).split("-")
        for start in range(len(params) - len(parts) + 1):
            if params[start : start + len(parts)] == parts:
                rest = params[:start] + params[start + len(parts) :]
                return (f"{base}[{'-'.join(rest)}]" if rest else base), str(name)
    return nodeid, backend


def rows(cases: dict[str, dict[str, Any]]) -> list[list[Any]]:
    """Per-category figures, then the total."""
    table: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    distinct: dict[str, set[str]] = defaultdict(set)
    for nodeid, case in cases.items():
        module = nodeid.split("::")[0].rsplit("/", 1)[-1]
        category = CATEGORIES.get(module, module)
        name, backend = split_backend(nodeid, case.get("backend"))
        distinct[category].add(name)
        row = table[category]
        row[f"runs on {backend}"] += 1
        outcome = str(case.get("outcome"))
        row["passed" if outcome == "passed" else "xfailed" if outcome.startswith("xfailed") else "failed"] += 1
        row["executions"] += int(case.get("executions", 0))
        row["state_lost"] += int(case.get("state_lost", 0))
    order = list(dict.fromkeys([*CATEGORIES.values(), *table]))
    out = [_row(name, len(distinct[name]), table[name]) for name in order if name in table]
    total: dict[str, Any] = defaultdict(int)
    for name in table:
        for key, value in table[name].items():
            total[key] += value
    out.append(_row("**total**", sum(len(v) for v in distinct.values()), total, bold=True))
    return out


def _row(name: str, cases: int, row: dict[str, Any], bold: bool = False) -> list[Any]:
    values = [
        cases,
        sum(row.get(f"runs on {b}", 0) for b in (*BACKENDS, None)),
        *(row.get(f"runs on {b}", 0) for b in BACKENDS),
        row.get("passed", 0),
        row.get("xfailed", 0),
        row.get("failed", 0),
        row.get("executions", 0),
        row.get("state_lost", 0),
    ]
    return [name, *(f"**{v}**" if bold else v for v in values)]


def markdown(cases: dict[str, dict[str, Any]]) -> str:
    """The table as Markdown."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows(cases)]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "benchmarks/results/hardening.json")
    print(markdown(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
