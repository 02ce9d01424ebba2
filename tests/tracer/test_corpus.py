"""The corpus: model-style cells with hand-written expected events; the tracer must match all.

Exact op sequence and source lines, exact pixel boxes, other parameters within tolerance.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pixelbox.tracer import Event, instrument
from pixelbox.tracer.static.audit import audit_cell, error_line
from pixelbox.tracer.static.reader import EpisodeNames, advance, read_cell
from tests.tracer.conftest import CellRun, Kernelish, corpus_files, split_cells

FILES = corpus_files()


def close(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and close(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        same_length = isinstance(actual, list) and len(actual) == len(expected)
        return same_length and all(close(a, e) for a, e in zip(actual, expected, strict=True))
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return bool(actual == expected)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return abs(actual - expected) <= 0.051 + 1e-3 * abs(expected)
    return False


def describe(events: list[dict[str, Any]]) -> str:
    return "\n".join(f"  {e['op']:<12} line {e['src'] and e['src']['line']} {e['params']}" for e in events)


def check_cell(events: list[dict[str, Any]], expected: list[dict[str, Any]], index: int) -> None:
    """``index`` is the cell's position in its file; ``cell`` in an expectation is the position
    of the earlier cell that defines the code (the event names that cell's execution)."""
    ops = [(e["op"], e["src"]["line"] if e["src"] else None) for e in events]
    want = [(e["op"], e["line"]) for e in expected]
    assert ops == want, f"op sequence differs; recorded:\n{describe(events)}"
    for got, exp in zip(events, expected, strict=True):
        Event.from_dict(got)
        assert got["status"] == exp.get("status", "ok"), got
        if "cell" in exp:
            assert got["src"].get("cell") == got["exec"] - index + exp["cell"], f"src.cell of {got}"
        else:
            assert "cell" not in got["src"], got
        if "error" in exp:
            assert got["error"]["type"] == exp["error"], got
        for key, value in exp.get("params", {}).items():
            assert key in got["params"], f"{got['op']} line {exp['line']}: no param {key!r} in {got['params']}"
            assert close(got["params"][key], value), f"{got['op']} line {exp['line']}: {key}={got['params'][key]!r}"


def known_issue(path: Path) -> str | None:
    """A tracer bug the file exposes: its expectation stays honest and the test is a strict xfail."""
    issue: str | None = json.loads(path.with_suffix(".json").read_text()).get("known_issue")
    return issue


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus_file(path: Path, kernel: Kernelish, sandbox_env: Path, request: pytest.FixtureRequest) -> None:
    issue = known_issue(path)
    if issue:
        request.node.add_marker(pytest.mark.xfail(reason=f"tracer bug: {issue}", strict=True))
    expected = json.loads(path.with_suffix(".json").read_text())["cells"]
    cells = split_cells(path.read_text())
    assert len(cells) == len(expected), "corpus file and its expectations disagree on the number of cells"
    names = EpisodeNames()
    for index, (source, want) in enumerate(zip(cells, expected, strict=True)):
        instrumented = instrument(source)
        if want.get("refused"):
            assert instrumented.reserved and instrumented.refusal, "reserved names must be flagged"
            continue
        assert (instrumented.syntax_error is not None) == bool(want.get("syntax_error"))
        run = kernel.run(source)
        error = run.result.error_in_exec or run.result.error_before_exec
        assert (type(error).__name__ if error else None) == want.get("error"), f"cell {index}: {error!r}"
        check_cell(run.events, want["events"], index)
        assert bool(run.problems) == bool(want.get("tampered")), run.problems
        check_audit(source, run, want, names)
        names = advance(names, read_cell(source, names), kernel.hooks.recorder.exec_index)


def check_audit(source: str, run: CellRun, want: dict[str, Any], names: EpisodeNames) -> None:
    """The audit is exact: written-not-run and run-not-written as the expectation lists them."""
    audit = audit_cell(
        source,
        run.events,
        names=names,
        raised_at=error_line(run.stdout) if run.result.error_in_exec else None,
        notices=run.problems,
        tampered=bool(run.problems),
    )
    expected = want.get("audit", {})
    if "unavailable" in expected:
        assert not audit.available and expected["unavailable"] in audit.reason, audit.reason
        return
    assert audit.available, audit.reason
    compare_audit(audit.to_dict(), want)


def compare_audit(audit: dict[str, Any], want: dict[str, Any]) -> None:
    """An available audit (``Audit.to_dict()``) is exactly the expected one: the certainly written
    operations (when listed), written-not-run and run-not-written."""
    if "written" in want:  # the operations the cell certainly writes, as [op, line]
        assert [[w["op"], w["line"]] for w in audit["written"] if w["certain"]] == want["written"], audit["written"]
    expected = want.get("audit", {})
    got_wnr = [[w["op"], w["line"], w["kind"]] for w in audit["written_not_run"]]
    # "helper defined in cell K (name)": K is the kernel's execution index, which depends on test order
    got_rnw = [
        [r["op"], r.get("line"), re.sub(r" \d+$", "", r["how"].split(" (")[0])] for r in audit["run_not_written"]
    ]
    assert got_wnr == expected.get("written_not_run", []), audit["written_not_run"]
    assert got_rnw == expected.get("run_not_written", []), audit["run_not_written"]


def test_corpus_is_large_enough() -> None:
    cells = sum(len(split_cells(p.read_text())) for p in FILES if not known_issue(p))
    assert cells >= 100
