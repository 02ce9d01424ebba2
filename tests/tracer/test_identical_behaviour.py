"""Tracing never changes behaviour: same stdout, same error, same artifacts (by hash)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.tracer.conftest import Kernelish, corpus_files, split_cells

FILES = [p for p in corpus_files() if "reserved" not in p.stem]
_TRACEBACK_RULE = "-" * 20


def run_file(kernel: Kernelish, path: Path, out: Path, traced: bool) -> list[tuple[str, str | None]]:
    """Run every cell of ``path`` in a fresh namespace; return (stdout, error) per cell."""
    os.environ["PROCESSED_IMAGE_SAVE_PATH"] = str(out)
    kernel.fresh_namespace()
    results = []
    for cell in split_cells(path.read_text()):
        run = kernel.run(cell, traced=traced)
        error = run.result.error_in_exec or run.result.error_before_exec
        printed = run.stdout.split(_TRACEBACK_RULE)[0]
        results.append((printed, None if error is None else f"{type(error).__name__}: {error}"))
    return results


def artifact_hashes(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_traced_and_untraced_runs_agree(path: Path, kernel: Kernelish, sandbox_env: Path, tmp_path: Path) -> None:
    plain_out, traced_out = tmp_path / "plain", tmp_path / "traced"
    plain_out.mkdir()
    traced_out.mkdir()
    plain = run_file(kernel, path, plain_out, traced=False)
    traced = run_file(kernel, path, traced_out, traced=True)
    assert traced == plain
    assert artifact_hashes(traced_out) == artifact_hashes(plain_out)
