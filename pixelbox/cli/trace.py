"""``pixelbox trace``: run cells in one sandbox, as turns of one episode, and show what executed.

Auditors and our own checks rely on its output, so the ``--json`` shape is stable: one object
per cell, ``{"cell", "status", "stdout", "error", "events", "artifacts"}`` (plus additive keys;
``--audit`` adds ``audit``, the shape of ``Execution.audit``).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tokenize
from pathlib import Path
from typing import Any

from pixelbox.cli.command import Command, add_backend_arguments, add_profile_argument
from pixelbox.contract.wire import json_safe
from pixelbox.runtime import Execution, Sandbox
from pixelbox.runtime.options import DEFAULT_TIMEOUT_S


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the command's options on ``parser``."""
    parser.add_argument("cells", nargs="+", type=Path, metavar="CELL.py", help="cells to run, in order")
    parser.add_argument("--image", action="append", default=[], type=Path, help="task input image (repeatable)")
    add_profile_argument(parser, "agentic-mme", "image I/O conventions")
    add_backend_arguments(parser)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    parser.add_argument("--json", action="store_true", help="one JSON object per cell")
    parser.add_argument(
        "--audit",
        action="store_true",
        help="also show what each cell writes beside what ran: written-not-run and run-not-written, with reasons",
    )


def cell_record(path: Path, result: Execution) -> dict[str, Any]:
    """The stable JSON view of one traced cell."""
    error = (
        None
        if result.error is None
        else {"ename": result.error.ename, "evalue": result.error.evalue, "traceback": result.error.traceback}
    )
    return {
        "cell": str(path),
        "status": result.status,
        "stdout": result.stdout,
        "error": error,
        "events": result.events,
        "artifacts": [a.to_json() for a in result.artifacts],
        "normalizations": result.normalizations,
        "notices": result.notices,
        "tampered": result.tampered,
        **({"audit": result.audit} if result.audit is not None else {}),
    }


def _describe_event(event: dict[str, Any]) -> str:
    src = event.get("src") or {}
    where = f"line {src['line']}" if src else "-"
    params = {k: v for k, v in event["params"].items() if k not in ("path", "root")}
    flow = f"{','.join(event['inputs']) or '-'} -> {event['output'] or '-'}"
    status = "" if event["status"] == "ok" else f" [{event['status']}: {(event.get('error') or {}).get('type')}]"
    return f"  #{event['seq']} {event['op']:<12} {where:<8} {flow:<24} {event['api']} {json.dumps(params)}{status}"


def print_human(record: dict[str, Any]) -> None:
    """Print one cell's outcome for a person."""
    print(f"== {record['cell']}: {record['status']}")
    if record["stdout"]:
        print("stdout:\n" + "\n".join("  " + line for line in record["stdout"].rstrip("\n").splitlines()))
    if record["error"]:
        print(f"error: {record['error']['ename']}: {record['error']['evalue']}")
    print(f"events ({len(record['events'])}):")
    for event in record["events"]:
        print(_describe_event(event))
    print(f"artifacts ({len(record['artifacts'])}):")
    for art in record["artifacts"]:
        print(f"  [{art['index']}] {art['name']} {art['width']}x{art['height']} {art['capture']} (line {art['line']})")
    for note in [n["message"] for n in record["normalizations"]] + record["notices"]:
        print(f"note: {note}")
    if "audit" in record:
        print_audit(record["audit"])


def print_audit(audit: dict[str, Any]) -> None:
    """The audit's differences, one line each (or why there is no audit)."""
    if not audit["available"]:
        print(f"audit: unavailable ({audit['reason']})")
        return
    missing, extra = audit["written_not_run"], audit["run_not_written"]
    print(
        f"audit: {len(audit['written'])} written, {len(missing)} written but not run, {len(extra)} run but not written"
    )
    for item in missing:
        print(f"  written, not run: {item['op']:<12} line {item['line']:<4} {item['api']}: {item['reason']}")
    for item in extra:
        what = item["op"] or "(untraced code)"
        detail = f" [{item['detail']}]" if item.get("detail") else ""
        print(f"  run, not written: {what:<12} line {item.get('line') or '-':<4} {item['how']}{detail}")


def _path_problem(path: Path) -> str | None:
    """Why ``path`` cannot be used as a cell or image file, or ``None`` when it can."""
    if path.is_dir():
        return f"{path} is a directory, not a file"
    if not path.exists():
        return f"no such file: {path}"
    if not path.is_file():
        return f"{path} is not a regular file"
    return None


def _read_cell(path: Path, problems: list[str]) -> str | None:
    """The cell's text; on failure, say why in ``problems`` and return ``None``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"cannot read {path}: {exc.strerror or exc}")
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown coding declaration, or one that contradicts a BOM
        problems.append(f"{path}: {exc.msg}")
        return None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        line = data[: exc.start].count(b"\n") + 1
        problems.append(
            f"{path} is not {encoding} text (byte 0x{bad} on line {line}); "
            "save the cell as UTF-8 or declare its encoding (# -*- coding: ... -*-)"
        )
        return None


def run(args: argparse.Namespace) -> int:
    """Run the cells; exit 0 when every cell ran without error, 1 otherwise, 2 on bad input."""
    problems = [problem for p in [*args.cells, *args.image] if (problem := _path_problem(p)) is not None]
    sources: list[tuple[Path, str]] = []
    for path in args.cells:
        if _path_problem(path) is None:
            source = _read_cell(path, problems)
            if source is not None:
                sources.append((path, source))
    if problems:
        for problem in problems:
            print(f"pixelbox trace: {problem}", file=sys.stderr)
        return 2
    io = {"enabled": True, "profile": args.profile}
    failed = False
    with Sandbox(inputs=args.image, io=io, backend=args.backend, runtime=args.runtime, timeout=args.timeout) as box:
        for path, source in sources:
            result = box.execute(source)
            if args.audit:
                box.audit(result)
            record = cell_record(path, result)
            failed = failed or record["status"] != "ok"
            if args.json:
                print(json.dumps(json_safe(record), allow_nan=False), flush=True)
            else:
                print_human(record)
    return 1 if failed else 0


COMMANDS = (Command("trace", "run cells in one sandbox and print the operations that executed", add_arguments, run),)
