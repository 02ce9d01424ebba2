"""Host-side ingestion: only real, singly-linked image files inside the workspace get in."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from imageio_shell import layer_shell, task_image
from PIL import Image

from pixelbox.runtime.artifacts import MAX_INDEX_AHEAD, Artifact, ArtifactRejected, Numbering, ingest_artifact

SECRET = "host-secret-4f2a"


def _saved_record(tmp_path: Path, code: str) -> tuple[dict[str, Any], Path]:
    with layer_shell(tmp_path, "agentic-mme", [("image_0001.png", task_image(64, 48, 0))]) as harness:
        run = harness.run(code)
        assert run.error is None, run.error
        assert len(run.artifacts) == 1
        return run.artifacts[0], harness.workspace


def test_a_captured_artifact_round_trips_through_json(tmp_path: Path) -> None:
    code = "from PIL import Image\nImage.open(input_image_paths[0]).save('x.png')"
    record, workspace = _saved_record(tmp_path, code)
    artifact = ingest_artifact(record, workspace)
    assert artifact == Artifact.from_json(json.loads(json.dumps(artifact.to_json())))
    assert Path(artifact.host_path).read_bytes() == (workspace / record["relpath"]).read_bytes()
    assert (artifact.width, artifact.height, artifact.format) == (64, 48, "PNG")


def test_symlink_swapped_in_after_capture_is_rejected_without_leaking(tmp_path: Path) -> None:
    secret = tmp_path / "host_secret.txt"
    secret.write_text(SECRET)
    record, workspace = _saved_record(tmp_path, "from PIL import Image\nImage.new('RGB', (8, 8)).save('a.png')")
    target = workspace / record["relpath"]
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(ArtifactRejected, match="symlink") as caught:
        ingest_artifact(record, workspace)
    assert SECRET not in str(caught.value)


def test_symlinked_directory_component_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    Image.new("RGB", (8, 8)).save(outside / "x.png")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "sub").symlink_to(outside)
    with pytest.raises(ArtifactRejected, match="symlink"):
        ingest_artifact(_record("sub/x.png"), workspace)


def test_hard_link_to_a_host_file_is_rejected(tmp_path: Path) -> None:
    host_file = tmp_path / "host.png"
    Image.new("RGB", (8, 8)).save(host_file)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.link(host_file, workspace / "x.png")
    with pytest.raises(ArtifactRejected, match="hard links"):
        ingest_artifact(_record("x.png"), workspace)


def test_text_named_png_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "x.png").write_text("this is not an image")
    with pytest.raises(ArtifactRejected, match="not an image"):
        ingest_artifact(_record("x.png"), tmp_path)


def test_truncated_png_is_rejected(tmp_path: Path) -> None:
    Image.new("RGB", (64, 64)).save(tmp_path / "full.png")
    (tmp_path / "x.png").write_bytes((tmp_path / "full.png").read_bytes()[:40])
    with pytest.raises(ArtifactRejected, match="not a valid image"):
        ingest_artifact(_record("x.png"), tmp_path)


def test_fifty_megapixel_bomb_is_rejected_before_decoding(tmp_path: Path) -> None:
    Image.new("1", (10_000, 5_000)).save(tmp_path / "bomb.png")
    assert (tmp_path / "bomb.png").stat().st_size < 200_000
    with pytest.raises(ArtifactRejected, match="decompression-bomb"):
        ingest_artifact(_record("bomb.png"), tmp_path)


def test_bytes_changed_after_capture_are_rejected(tmp_path: Path) -> None:
    record, workspace = _saved_record(tmp_path, "from PIL import Image\nImage.new('RGB', (8, 8)).save('a.png')")
    Image.new("RGB", (9, 9)).save(workspace / record["relpath"])
    with pytest.raises(ArtifactRejected, match="changed after"):
        ingest_artifact(record, workspace)


@pytest.mark.parametrize("relpath", ["../x.png", "/etc/passwd", "a/../../x.png", "", None])
def test_paths_leaving_the_workspace_are_rejected(tmp_path: Path, relpath: Any) -> None:
    with pytest.raises(ArtifactRejected, match=r"relpath|relative"):
        ingest_artifact(_record(relpath), tmp_path)


def test_fifo_is_rejected_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.png")
    with pytest.raises(ArtifactRejected, match="not a regular file"):
        ingest_artifact(_record("x.png"), tmp_path)


def test_missing_file_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ArtifactRejected, match="does not exist"):
        ingest_artifact(_record("gone.png"), tmp_path)


def _record(relpath: Any) -> dict[str, Any]:
    return {
        "index": 1,
        "name": "x.png",
        "relpath": relpath,
        "path": f"/workspace/{relpath}",
        "capture": "saved",
        "asked": "x.png",
        "api": "test",
        "exec": 1,
        "line": 1,
    }


def test_numbering_refuses_inputs_duplicates_jumps_and_off_profile_names() -> None:
    """The host's own account of artifact numbers: index ``first`` and up, each after the last,
    at most ``MAX_INDEX_AHEAD`` past it, named by its number under a numbering profile; a refused
    record never moves the numbering on."""
    numbering = Numbering(1, ("transformed_image_",))
    assert numbering.claim({"index": 1, "relpath": "out/transformed_image_1.png"}) == 1
    refused = {
        "an input's number": {"index": 0, "relpath": "transformed_image_0.png"},
        "a number already used": {"index": 1, "relpath": "transformed_image_1.png"},
        "far past the next": {"index": 3 + MAX_INDEX_AHEAD, "relpath": f"transformed_image_{3 + MAX_INDEX_AHEAD}.png"},
        "no integer index": {"index": True, "relpath": "transformed_image_2.png"},
        "not by its number": {"index": 2, "relpath": "planted.png"},
    }
    for words, record in refused.items():
        with pytest.raises(ArtifactRejected, match=words) as caught:
            numbering.claim(record)
        assert caught.value.forged
    assert numbering.next == 2
    assert numbering.claim({"index": 4, "relpath": "transformed_image_4.jpg"}) == 4
    assert Numbering(0).claim({"index": 0, "relpath": "anything.png"}) == 0
