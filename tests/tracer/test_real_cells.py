"""Real model-written code from released trajectories of code-mode visual agents, run as it was written.

Each ``corpus/real/*.py`` holds cells quoted from a public source (Thyme's README and technical
report, PyVision's report) with their provenance in the ``.json`` beside it: repository, file, commit
or URL, and which sample each cell answers. The cells run in a real local sandbox with the image I/O
layer (the paths the models invented, ``hr_bench_4k/179.jpg`` or ``/mnt/data/...``, resolved to
generated input images of the named files, as a harness serves them), and the executed events and the
audit (written-not-run, run-not-written) must be exactly the expected ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pixelbox.runtime import Sandbox
from tests.tracer.conftest import split_cells
from tests.tracer.test_corpus import check_cell, compare_audit

REAL = Path(__file__).parent / "corpus" / "real"
FILES = sorted(REAL.glob("*.py"))


def spec_of(path: Path) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())
    return spec


def generated_input(folder: Path, name: str, size: list[int]) -> Path:
    """A gradient picture of ``size`` saved as ``name`` (its format from the extension)."""
    width, height = size
    x = np.linspace(0, 255, width)[None, :].repeat(height, 0)
    y = np.linspace(0, 255, height)[:, None].repeat(width, 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    Image.fromarray(np.stack([x, y, (x + y) / 2], axis=-1).astype(np.uint8)).save(path)
    return path


def model_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the model's own code (not the I/O layer capturing a save it relocated)."""
    return [e for e in events if not str(e.get("api", "")).startswith("pixelbox.")]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_real_cells_run_and_audit_as_expected(path: Path, tmp_path: Path) -> None:
    spec = spec_of(path)
    cells = split_cells(path.read_text())
    assert len(cells) == len(spec["cells"]), "corpus file and its expectations disagree on the number of cells"
    inputs = [generated_input(tmp_path / "inputs", i["name"], i["size"]) for i in spec["inputs"]]
    io = {"enabled": True, "profile": spec.get("profile", "generic")}
    with Sandbox(inputs=inputs, io=io, timeout=120, backend="local") as sandbox:
        for index, (source, want) in enumerate(zip(cells, spec["cells"], strict=True)):
            result = sandbox.execute(source)
            assert (result.error.ename if result.error else None) == want.get("error"), result.error
            check_cell(model_events(result.events), want["events"], index)
            audit = sandbox.audit(result)
            assert audit["available"], audit
            compare_audit(audit, want)


def test_every_real_cell_says_where_it_comes_from() -> None:
    cells = 0
    for path in FILES:
        spec = spec_of(path)
        source = spec["source"]
        assert source["repository_or_paper"] and source["file"] and (source.get("commit") or source.get("url")), path
        assert all(cell.get("sample") for cell in spec["cells"]), f"{path.name}: a cell without its sample"
        cells += len(spec["cells"])
    assert cells >= 10
