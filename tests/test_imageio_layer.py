"""In-kernel behaviour beyond the style corpus: errors, caps, attacks, and recovery afterwards."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest
from imageio_shell import LayerShell, layer_shell, task_image
from PIL import Image

from pixelbox.kernel import imageio
from pixelbox.kernel.imageio import SettingsError

ONE = [("image_0001.png", task_image(64, 48, 0))]
TWO = [("image_0002_1.png", task_image(64, 48, 1)), ("image_0002_2.png", task_image(32, 24, 2))]


def _recovers(harness: LayerShell) -> None:
    """The shell still runs code and captures images after whatever the test did."""
    run = harness.run("from PIL import Image\nImage.new('RGB', (5, 5)).show()")
    assert run.error is None and [(a["width"], a["capture"]) for a in run.artifacts] == [(5, "shown")]


def test_symlink_planted_at_the_next_name_is_never_written_through(tmp_path: Path) -> None:
    secret = tmp_path / "host_secret.txt"
    secret.write_text("secret")
    with layer_shell(tmp_path, "agentic-mme", ONE) as harness:
        (harness.workspace / "transformed_image_1.png").symlink_to(secret)
        run = harness.run("from PIL import Image\nImage.new('RGB', (8, 8)).save('transformed_image_1.png')")
        assert run.error is None
        assert [a["name"] for a in run.artifacts] == ["transformed_image_2.png"]
        assert [n["why"] for n in run.normalizations] == ["name_taken"]
        assert secret.read_text() == "secret"
        _recovers(harness)


def test_fifty_megapixel_save_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run("from PIL import Image\nImage.new('1', (10_000, 5_000)).save('bomb.png')")
        assert type(run.error).__name__ == "ArtifactLimitError"
        assert "50,000,000 pixels" in str(run.error) and "resize or crop" in str(run.error)
        assert run.artifacts == [] and not (harness.workspace / "bomb.png").exists()
        _recovers(harness)


def test_text_file_named_png_fails_to_open_and_the_shell_keeps_working(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run("open('x.png', 'w').write('not an image')\nfrom PIL import Image\nImage.open('x.png')")
        assert type(run.error).__name__ == "UnidentifiedImageError"
        assert run.artifacts == []
        _recovers(harness)


def test_artifact_count_cap_applies_per_execution(tmp_path: Path) -> None:
    limits = {"max_artifacts_per_exec": 2}
    with layer_shell(tmp_path, "agentic-mme", ONE, limits=limits) as harness:
        code = "from PIL import Image\nfor n in range(3):\n    Image.new('RGB', (4, 4)).save(f'out_{n}.png')"
        run = harness.run(code)
        assert type(run.error).__name__ == "ArtifactLimitError" and "limit per block is 2" in str(run.error)
        assert [a["index"] for a in run.artifacts] == [1, 2]
        assert [a["index"] for a in harness.run(code.replace("range(3)", "range(2)")).artifacts] == [3, 4]


def test_pixel_cap_per_execution(tmp_path: Path) -> None:
    limits = {"max_pixels_per_exec": 250}
    with layer_shell(tmp_path, "generic", ONE, limits=limits) as harness:
        code = "import cv2, numpy as np\nfor n in range(3):\n    cv2.imwrite(f'{n}.png', np.zeros((10, 10)))"
        run = harness.run(code)
        assert type(run.error).__name__ == "ArtifactLimitError" and "per block" in str(run.error)
        assert len(run.artifacts) == 2


def test_limit_hit_by_a_last_expression_becomes_a_notice(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "agentvista", ONE, limits={"max_pixels_per_image": 100}) as harness:
        run = harness.run("original_image")
        assert run.error is None and run.artifacts == []
        assert "not captured" in run.notices[0]["message"] and "pixels" in run.notices[0]["message"]
        _recovers(harness)


def test_earlier_artifacts_are_never_overwritten(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "visualtoolbench", ONE) as harness:
        run = harness.run(
            "from PIL import Image\nfor size in (4, 5, 6):\n    Image.new('RGB', (size, size)).save('same.png')"
        )
        for record in run.artifacts:
            path = harness.workspace / record["relpath"]
            assert (path.stat().st_size, path.stat().st_mtime_ns) == (record["bytes"], record["mtime_ns"])
            assert Image.open(path).size == (record["width"], record["height"])
        assert [a["width"] for a in run.artifacts] == [4, 5, 6]
        assert [a["index"] for a in run.artifacts] == [0, 1, 2]


def test_saving_over_an_input_makes_an_artifact_and_leaves_the_input(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "agentic-mme", ONE) as harness:
        original = (harness.inputs_dir / "image_0001.png").read_bytes()
        run = harness.run(
            "import os\nfrom PIL import Image\np = os.environ['ORIGINAL_IMAGE_PATH']\n"
            "Image.open(p).convert('L').save(p)\nassert Image.open(p).mode == 'L'"
        )
        assert run.error is None
        assert [n["why"] for n in run.normalizations] == ["input_path", "saved_here"]
        assert (harness.inputs_dir / "image_0001.png").read_bytes() == original


def test_ambiguous_read_lists_the_candidates(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "agentic-mme", TWO) as harness:
        run = harness.run("from PIL import Image\nImage.open('/mnt/data/input.png')")
        message = str(run.error)
        assert type(run.error).__name__ == "AmbiguousImagePathError" and isinstance(run.error, FileNotFoundError)
        assert "image_0002_1.png" in message and "image_0002_2.png" in message
        _recovers(harness)


def test_missing_read_lists_available_images(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        harness.run("from PIL import Image\nImage.new('RGB', (4, 4)).save('mine.png')")
        run = harness.run("Image.open('elsewhere/chart.png')")
        assert type(run.error).__name__ == "ImageNotFoundError"
        assert "input 0 'image_0001.png'" in str(run.error) and "artifact 1 'mine.png'" in str(run.error)


def test_cv2_imread_of_a_missing_image_returns_none_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run("import cv2\nresult = cv2.imread('nowhere/chart.png')\nassert result is None")
        assert run.error is None
        assert "Available images: input 0 'image_0001.png'" in capsys.readouterr().err


def test_a_figure_saved_in_the_cell_is_not_captured_again_at_its_end(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('p.png')")
        assert [(a["name"], a["capture"]) for a in run.artifacts] == [("p.png", "saved")]
        assert harness.run("import matplotlib.pyplot as plt\nassert plt.get_fignums() == []").error is None


def test_non_image_outputs_and_buffers_pass_through(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run(
            "import io\nimport matplotlib.pyplot as plt\nfrom PIL import Image\nplt.plot([1, 2])\n"
            "plt.savefig('chart.svg')\nbuf = io.BytesIO()\nImage.new('RGB', (4, 4)).save(buf, 'PNG')\n"
            "plt.close('all')"
        )
        assert run.error is None and run.artifacts == []
        assert (harness.workspace / "chart.svg").exists()


def test_uninstall_restores_libraries_and_environment(tmp_path: Path) -> None:
    before = (Image.Image.save, Image.open, builtins.open, os.environ.get("OUTPUT_DIR"))
    with layer_shell(tmp_path, "generic", ONE):
        assert Image.Image.save is not before[0] and os.environ["OUTPUT_DIR"]
    assert (Image.Image.save, Image.open, builtins.open, os.environ.get("OUTPUT_DIR")) == before
    assert imageio.current_layer() is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"profile": "openai"}, "profile 'openai' is not a profile object"),
        ({"profile": {"name": "x", "stem": ""}}, "stem must be a non-empty string"),
        ({"profile": {"name": "x", "colour": 1}}, "profile has unknown keys"),
        ({"workspace": "relative"}, "'workspace' must be an absolute"),
        ({"inputs": [{"index": 1, "name": "a.png", "path": "/a.png"}]}, "0, 1, 2"),
        ({"inputs": [{"index": 0, "name": "a.png"}]}, "exactly index, name, path"),
        ({"limits": {"max_images": 3}}, "unknown limits"),
        ({"limits": {"max_pixels_per_image": 0}}, "positive int"),
        ({"artifact_dir": "/elsewhere"}, "inside the workspace"),
        ({"colour": True}, "unknown keys"),
    ],
)
def test_bad_sections_are_refused_with_the_key_at_fault(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    section = {"enabled": True, "workspace": str(tmp_path), "inputs": [], **change}
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        imageio.parse_section(section)


LAZY_PATCHING = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from pixelbox.kernel import imageio

shell = InteractiveShell.instance()
imageio.install(shell, {"enabled": True, "workspace": sys.argv[1], "inputs": []})
facts = {"loaded_at_install": sorted(m for m in ("numpy", "PIL", "cv2") if m in sys.modules)}
import cv2
from PIL import Image
facts["patched"] = [cv2.imwrite is not cv2._native.imwrite, hasattr(Image.open, "__wrapped__")]
imageio.uninstall()
facts["restored"] = [cv2.imwrite is cv2._native.imwrite, not hasattr(Image.open, "__wrapped__")]
print(json.dumps(facts))
"""


def test_libraries_imported_after_install_are_patched_and_restored(tmp_path: Path) -> None:
    """In a fresh interpreter: installing loads no image library; cv2 and PIL imported later are
    patched on import and restored by uninstall, cv2 included (its package copies its functions
    from a native module of the same name, which must stay unpatched)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", LAZY_PATCHING, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {"loaded_at_install": [], "patched": [True, True], "restored": [True, True]}, facts
