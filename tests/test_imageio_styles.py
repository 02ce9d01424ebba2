"""The conformance corpus, run in-process against a real IPython shell with the I/O layer."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from imageio_shell import CellRun, layer_shell, task_image
from imageio_styles import MULTI_IMAGE_STYLES, STYLES, Style, actual_artifacts, actual_normalizations

from pixelbox.runtime.artifacts import ingest_artifact


def _run_style(tmp_path: Path, style: Style) -> tuple[list[CellRun], Path, dict[str, str]]:
    inputs = [(name, task_image(w, h, seed)) for seed, (name, w, h) in enumerate(style.inputs)]
    with layer_shell(tmp_path, style.profile, inputs, **style.section) as harness:
        before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in harness.inputs_dir.iterdir()}
        runs = [harness.run(cell) for cell in style.cells]
        after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in harness.inputs_dir.iterdir()}
        assert after == before, "an input image was modified"
        return runs, harness.workspace, before


@pytest.mark.parametrize("style", STYLES + MULTI_IMAGE_STYLES, ids=lambda s: s.name)
def test_style_yields_exact_artifacts_and_normalizations(tmp_path: Path, style: Style) -> None:
    runs, _workspace, _ = _run_style(tmp_path, style)
    artifacts = [record for run in runs for record in run.artifacts]
    normalizations = [record for run in runs for record in run.normalizations]
    errors = [type(run.error).__name__ for run in runs if run.error is not None]

    assert actual_artifacts(artifacts) == list(style.artifacts)
    assert actual_normalizations(normalizations) == list(style.normalizations)
    assert errors == ([style.error] if style.error else [])
    assert all(not run.notices for run in runs), [run.notices for run in runs]


@pytest.mark.parametrize("style", STYLES + MULTI_IMAGE_STYLES, ids=lambda s: s.name)
def test_every_style_artifact_passes_host_ingestion(tmp_path: Path, style: Style) -> None:
    runs, workspace, _ = _run_style(tmp_path, style)
    for run in runs:
        for record in run.artifacts:
            artifact = ingest_artifact(record, workspace)
            assert (artifact.width, artifact.height, artifact.size_bytes) == (
                record["width"],
                record["height"],
                record["bytes"],
            )
            assert artifact.exec_index == run.execution_count


def test_no_image_bytes_travel_through_the_channel(tmp_path: Path) -> None:
    shown = [s for s in STYLES if s.name in {"plt_show", "display_call", "bare_last_expression", "display_array"}]
    for number, style in enumerate(shown):
        runs, _, _ = _run_style(tmp_path / str(number), style)
        mimes = {mime for run in runs for output in run.outputs for mime in output}
        assert not {m for m in mimes if m.startswith("image/")}, mimes


def test_artifact_records_point_at_the_producing_line(tmp_path: Path) -> None:
    style = next(s for s in STYLES if s.name == "dies_after_two_saves")
    runs, _, _ = _run_style(tmp_path, style)
    lines = [record["line"] for record in runs[0].artifacts]
    cell_lines = style.cells[0].lstrip("\n").splitlines()  # IPython drops leading blank lines
    assert [cell_lines[line - 1].split("(")[0] for line in lines] == ["img.crop", "img.rotate"]
