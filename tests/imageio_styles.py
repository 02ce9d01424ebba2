"""The image I/O conformance corpus: one visual task written in the styles models actually use.

Each :class:`Style` is backend-neutral data: the profile, the inputs, the cells, and the exact
artifact list and normalizations expected. The in-process suite (test_imageio_styles.py) runs
it against a real IPython shell; the sandbox conformance suite can run the same list against
every backend and compare ``Execution.artifacts`` / ``Execution.normalizations`` the same way.

The task: find the object in the region x 100..300, y 50..250 of a 640x480 image and look at it
closely (crop, often zoom 2x). Code in cells asserts what it can see, so a broken read fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

SINGLE = (("image_0001.png", 640, 480),)
"""Input file name, width, height (the pixels come from imageio_shell.task_image)."""

MULTI = (("image_0002_1.png", 640, 480), ("image_0002_2.png", 320, 240))


@dataclass(frozen=True)
class Art:
    """An expected artifact: index, assigned name, width, height, capture kind."""

    index: int
    name: str
    width: int
    height: int
    capture: str


@dataclass(frozen=True)
class Norm:
    """An expected normalization: read/write, reason code, and the file name that was used."""

    op: str
    why: str
    used_name: str


@dataclass(frozen=True)
class Style:
    """One way of writing the task, with everything the runtime must report for it."""

    name: str
    profile: str
    cells: tuple[str, ...]
    artifacts: tuple[Art, ...]
    normalizations: tuple[Norm, ...] = ()
    error: str | None = None
    inputs: tuple[tuple[str, int, int], ...] = SINGLE
    section: dict[str, Any] = field(default_factory=dict)


def actual_artifacts(records: list[dict[str, Any]]) -> list[Art]:
    """Reduce artifact records (kernel records or Execution.artifacts) to comparable values."""
    return [Art(r["index"], r["name"], r["width"], r["height"], r["capture"]) for r in records]


def actual_normalizations(records: list[dict[str, Any]]) -> list[Norm]:
    """Reduce normalization records to comparable values."""
    return [Norm(r["op"], r["why"], os.path.basename(r["used"])) for r in records]


STYLES: tuple[Style, ...] = (
    Style(
        "env_var_paths",
        "agentic-mme",
        (
            """
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
crop = img.crop((100, 50, 300, 250)).resize((400, 400))
crop.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
""",
        ),
        (Art(1, "transformed_image_1.png", 400, 400, "saved"),),
    ),
    Style(
        "preloaded_variables",
        "agentvista",
        (
            """
zoom = original_image.crop((100, 50, 300, 250)).resize((400, 400))
zoom.save("zoom.png")
""",
            """
assert tool_image_1.size == (400, 400)
""",
        ),
        (Art(1, "tool_image_1.png", 400, 400, "saved"),),
        (Norm("write", "naming", "tool_image_1.png"),),
    ),
    Style(
        "mnt_data_paths",
        "agentic-mme",
        (
            """
from PIL import Image
img = Image.open("/mnt/data/image_0001.png")
assert img.size == (640, 480)
img.crop((100, 50, 300, 250)).save("/mnt/data/crop.png")
""",
        ),
        (Art(1, "transformed_image_1.png", 200, 200, "saved"),),
        (Norm("read", "input_name", "image_0001.png"), Norm("write", "outside_workspace", "transformed_image_1.png")),
    ),
    Style(
        "made_up_relative_dirs",
        "agentic-mme",
        (
            """
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
img.crop((100, 50, 300, 250)).save("results/zoomed/region.png")
assert Image.open("results/zoomed/region.png").size == (200, 200)
""",
        ),
        (Art(1, "transformed_image_1.png", 200, 200, "saved"),),
        (
            Norm("write", "missing_directory", "transformed_image_1.png"),
            Norm("read", "saved_here", "transformed_image_1.png"),
        ),
    ),
    Style(
        "directory_as_file_name",
        "agentic-mme",
        (
            """
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
img.crop((100, 50, 300, 250)).save(os.environ["PROCESSED_IMAGE_SAVE_PATH"])
""",
        ),
        (Art(1, "transformed_image_1.png", 200, 200, "saved"),),
        (Norm("write", "directory_as_name", "transformed_image_1.png"),),
    ),
    Style(
        "cv2_imwrite",
        "agentic-mme",
        (
            """
import os
import cv2
im = cv2.imread(os.environ["ORIGINAL_IMAGE_PATH"])
crop = im[50:250, 100:300]
big = cv2.resize(crop, None, fx=2, fy=2, interpolation=cv2.INTER_CUBIC)
gray = cv2.cvtColor(big, cv2.COLOR_BGR2GRAY)
ok = cv2.imwrite(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"), gray)
assert ok is True
""",
        ),
        (Art(1, "transformed_image_1.png", 400, 400, "saved"),),
    ),
    Style(
        "plt_show",
        "agentvista",
        (
            """
import matplotlib.pyplot as plt
import numpy as np
plt.figure(figsize=(4, 3), dpi=100)
plt.imshow(np.asarray(original_image)[50:250, 100:300])
plt.axis("off")
plt.show()
""",
        ),
        (Art(1, "tool_image_1.png", 400, 300, "shown"),),
    ),
    Style(
        "display_call",
        "agentvista",
        (
            """
from IPython.display import display
display(original_image.crop((100, 50, 300, 250)))
""",
        ),
        (Art(1, "tool_image_1.png", 200, 200, "displayed"),),
    ),
    Style(
        "bare_last_expression",
        "agentvista",
        (
            """
original_image.crop((100, 50, 300, 250)).resize((400, 400))
""",
        ),
        (Art(1, "tool_image_1.png", 400, 400, "last_expression"),),
    ),
    Style(
        "repeated_saves_one_name",
        "agentic-mme",
        (
            """
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
out = os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png")
for box in [(100, 50, 200, 150), (100, 50, 300, 200), (100, 50, 300, 250)]:
    img.crop(box).save(out)
assert Image.open(out).size == (200, 200)
""",
        ),
        (
            Art(1, "transformed_image_1.png", 100, 100, "saved"),
            Art(2, "transformed_image_2.png", 200, 150, "saved"),
            Art(3, "transformed_image_3.png", 200, 200, "saved"),
        ),
        (
            Norm("write", "name_taken", "transformed_image_2.png"),
            Norm("write", "name_taken", "transformed_image_3.png"),
            Norm("read", "saved_here", "transformed_image_3.png"),
        ),
    ),
    Style(
        "numbering_from_zero",
        "visualtoolbench",
        (
            """
import os
from PIL import Image
img = Image.open(os.environ["INPUT_IMAGE_PATH"])
img.crop((100, 50, 300, 250)).save("transformed_image_0.png")
img.crop((100, 50, 300, 250)).resize((400, 400)).save("transformed_image_1.png")
""",
        ),
        (Art(0, "transformed_image_0.png", 200, 200, "saved"), Art(1, "transformed_image_1.png", 400, 400, "saved")),
    ),
    Style(
        "dies_after_two_saves",
        "agentic-mme",
        (
            """
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
save_dir = os.environ["PROCESSED_IMAGE_SAVE_PATH"]
img.crop((100, 50, 300, 250)).save(os.path.join(save_dir, "transformed_image_1.png"))
img.rotate(90, expand=True).save(os.path.join(save_dir, "transformed_image_2.png"))
result = undefined_helper(img)
""",
        ),
        (Art(1, "transformed_image_1.png", 200, 200, "saved"), Art(2, "transformed_image_2.png", 480, 640, "saved")),
        error="NameError",
    ),
    # Beyond the twelve styles of the issue: every other capture path.
    Style(
        "image_show",
        "generic",
        (
            """
import os
from PIL import Image
Image.open(os.environ["INPUT_IMAGE_PATH"]).crop((100, 50, 300, 250)).show()
""",
        ),
        (Art(1, "output_1.png", 200, 200, "shown"),),
    ),
    Style(
        "cv2_imshow",
        "generic",
        (
            """
import os
import cv2
im = cv2.imread(os.environ["INPUT_IMAGE_PATH"])
cv2.imshow("region", im[50:250, 100:300])
cv2.waitKey(0)
cv2.destroyAllWindows()
""",
        ),
        (Art(1, "output_1.png", 200, 200, "shown"),),
    ),
    Style(
        "savefig_made_up_path",
        "agentic-mme",
        (
            """
import os
import matplotlib.pyplot as plt
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
fig = plt.figure(figsize=(5, 4), dpi=100)
plt.imshow(img.crop((100, 50, 300, 250)))
plt.savefig("/mnt/data/plot.png")
""",
        ),
        (Art(1, "transformed_image_1.png", 500, 400, "saved"),),
        (Norm("write", "outside_workspace", "transformed_image_1.png"),),
    ),
    Style(
        "plt_imsave_and_figure_last_expression",
        "agentvista",
        (
            """
import numpy as np
import matplotlib.pyplot as plt
region = np.asarray(original_image)[50:250, 100:300]
plt.imsave("tool_image_1.png", region)
fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
ax.imshow(region)
fig
""",
        ),
        (Art(1, "tool_image_1.png", 200, 200, "saved"), Art(2, "tool_image_2.png", 300, 200, "last_expression")),
    ),
    Style(
        "skimage_and_imageio",
        "generic",
        (
            """
import os
import numpy as np
import imageio.v3 as iio
import skimage.io
img = skimage.io.imread(os.environ["INPUT_IMAGE_PATH"])
skimage.io.imsave("region.png", img[50:250, 100:300], check_contrast=False)
iio.imwrite("zoom.png", np.repeat(np.repeat(img[50:250, 100:300], 2, axis=0), 2, axis=1))
assert iio.imread("/mnt/data/region.png").shape == (200, 200, 3)
""",
        ),
        (Art(1, "region.png", 200, 200, "saved"), Art(2, "zoom.png", 400, 400, "saved")),
        (Norm("read", "artifact_name", "region.png"),),
    ),
    Style(
        "display_array",
        "generic",
        (
            """
import numpy as np
from PIL import Image
from IPython.display import display
display(np.asarray(Image.open(input_image_paths[0]))[50:250, 100:300])
""",
        ),
        (Art(1, "output_1.png", 200, 200, "displayed"),),
    ),
    Style(
        "open_figure_at_end_of_cell",
        "agentvista",
        (
            """
import matplotlib.pyplot as plt
plt.figure(figsize=(2, 2), dpi=100)
plt.imshow(original_image.crop((100, 50, 300, 250)))
""",
        ),
        (Art(1, "tool_image_1.png", 200, 200, "shown"),),
    ),
    Style(
        "open_figure_not_shown_in_script_profiles",
        "agentic-mme",
        (
            """
import matplotlib.pyplot as plt
plt.figure(figsize=(2, 2), dpi=100)
plt.plot([0, 1], [1, 0])
""",
            """
import matplotlib.pyplot as plt
assert plt.get_fignums() == []
""",
        ),
        (),
    ),
    Style(
        "helper_across_turns",
        "agentic-mme",
        (
            """
import os
from PIL import Image
def save_step(image, box, n):
    image.crop(box).save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], f"transformed_image_{n}.png"))
""",
            """
img = Image.open(os.environ["LOCAL_INPUT_IMAGE_PATH"])
save_step(img, (100, 50, 300, 250), 1)
""",
            """
img = Image.open(os.environ["LOCAL_INPUT_IMAGE_PATH"])
assert img.size == (200, 200)
save_step(img, (0, 0, 100, 100), 1)
""",
        ),
        (Art(1, "transformed_image_1.png", 200, 200, "saved"), Art(2, "transformed_image_2.png", 100, 100, "saved")),
        (Norm("write", "name_taken", "transformed_image_2.png"),),
    ),
    Style(
        "generic_keeps_chosen_names",
        "generic",
        (
            """
from PIL import Image
img = Image.open("image_0001.png")
img.crop((100, 50, 300, 250)).save("crop.png")
img.crop((100, 50, 200, 150)).save("crop.png")
""",
        ),
        (Art(1, "crop.png", 200, 200, "saved"), Art(2, "crop_2.png", 100, 100, "saved")),
        (Norm("read", "input_name", "image_0001.png"), Norm("write", "name_taken", "crop_2.png")),
    ),
)

MULTI_IMAGE_STYLES: tuple[Style, ...] = (
    Style(
        "multi_env_vars",
        "agentic-mme",
        (
            """
import os
from PIL import Image
first = Image.open(os.environ["ORIGINAL_IMAGE_PATH_1"])
second = Image.open(os.environ["ORIGINAL_IMAGE_PATH_2"])
assert os.environ["ORIGINAL_IMAGE_PATH"] == os.environ["ORIGINAL_IMAGE_PATH_1"]
assert (first.size, second.size) == ((640, 480), (320, 240))
second.crop((0, 0, 160, 120)).save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
""",
        ),
        (Art(1, "transformed_image_1.png", 160, 120, "saved"),),
        inputs=MULTI,
    ),
    Style(
        "multi_preloaded",
        "agentvista",
        (
            """
assert original_image.size == image.size == (640, 480)
assert original_image_1.size == (320, 240)  # AgentVista: the second input is original_image_1
assert "original_image_2" not in dir()
original_image_1.crop((0, 0, 160, 120))
""",
        ),
        (Art(1, "tool_image_1.png", 160, 120, "last_expression"),),
        inputs=MULTI,
    ),
    Style(
        "preloads_set_again_each_cell",
        "agentvista",
        (
            "image = image.rotate(90, expand=True)\noriginal_image = None\nimage.size",
            "assert original_image.size == image.size == (640, 480)\nassert image is original_image\n"
            "image.crop((0, 0, 10, 10))",
            "tool_image_1 = None",
            "assert tool_image_1.size == (10, 10)",
        ),
        (Art(1, "tool_image_1.png", 10, 10, "last_expression"),),
    ),
    Style(
        "multi_numbered_from_zero",
        "visualtoolbench",
        (
            """
import os
from PIL import Image
paths = os.environ["INPUT_IMAGE_PATHS"].split(os.pathsep)
for i, path in enumerate(paths):
    Image.open(path).crop((0, 0, 100, 100)).save(f"transformed_image_{i}.png")
""",
        ),
        (Art(0, "transformed_image_0.png", 100, 100, "saved"), Art(1, "transformed_image_1.png", 100, 100, "saved")),
        inputs=MULTI,
    ),
    Style(
        "multi_generic_by_name",
        "generic",
        (
            """
from PIL import Image
assert len(input_image_paths) == 2
Image.open("/mnt/data/image_0002_2.jpg").save("second.png")
""",
        ),
        (Art(1, "second.png", 320, 240, "saved"),),
        (Norm("read", "extension", "image_0002_2.png"),),
        inputs=MULTI,
    ),
    Style(
        "multi_ambiguous_placeholder_fails",
        "generic",
        (
            """
from PIL import Image
Image.open("/mnt/data/image.png")
""",
        ),
        (),
        error="AmbiguousImagePathError",
        inputs=MULTI,
    ),
)
