"""The RestrictedPython policy as model code meets it through a real sandbox."""

from __future__ import annotations

from typing import Any

from pixelbox.runtime import Sandbox

IMAGE_WORK = """
import numpy as np
from PIL import Image
img = Image.fromarray((np.arange(64 * 48 * 3) % 251).astype('uint8').reshape(48, 64, 3))
crop = img.crop((8, 4, 40, 30))
crop.save('crop.png')
print(crop.size, Image.open('crop.png').size)
"""


def test_policy_defaults_on_for_local_and_off_for_docker(backend: dict[str, Any]) -> None:
    with Sandbox(**backend) as sb:
        assert sb.info.policy is (backend["backend"] == "local")


def test_policy_rejects_escapes_as_error_results_and_keeps_working(backend: dict[str, Any]) -> None:
    with Sandbox(policy=True, **backend) as sb:
        static = sb.execute("x = 1\n().__class__.__mro__")
        assert static.status == "error" and static.error is not None
        assert static.error.ename == "PolicyViolation"
        assert "no-underscore-attr" in static.error.evalue and "line 2" in static.error.evalue
        assert sb.execute("x").status == "error", "a statically rejected cell must run nothing"
        runtime = sb.execute("import subprocess")
        assert runtime.status == "error" and runtime.error is not None
        assert runtime.error.ename == "PolicyViolation" and "denied-module" in runtime.error.evalue
        work = sb.execute(IMAGE_WORK)
        assert work.status == "ok", work.error
        assert work.stdout == "(32, 26) (32, 26)\n"


def test_policy_can_be_switched_off_for_local() -> None:
    with Sandbox(backend="local", policy=False) as sb:
        assert sb.execute("import sys\nprint(sys.version_info[0])").stdout == "3\n"
