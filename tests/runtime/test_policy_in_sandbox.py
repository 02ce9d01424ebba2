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


HOST_INTERNALS = ("/work/main", "site-packages", "interactiveshell", "policy_", "pixelbox/kernel")
POLICY_ERRORS = [
    # (cell, rule, the agent's line the traceback must quote)
    ("x = 1\ny = x._secret", "no-underscore-attr", "y = x._secret"),
    ("import subprocess", "denied-module", "import subprocess"),
    ("import os\nos.system('true')", "denied-os-function", "os.system('true')"),
    ("def helper():\n    import socket\n\nhelper()", "denied-module", "import socket"),
    ("import operator\nop = operator.methodcaller('__reduce__')", "no-underscore-attr", "operator.methodcaller"),
]


def test_policy_errors_show_only_the_agents_code() -> None:
    """A policy error names the violation and the agent's own line, never host internals
    (IPython's AST hook, the policy's guards, the venv's site-packages)."""
    with Sandbox(backend="local") as sb:
        assert sb.info.policy
        for cell, rule, quoted in POLICY_ERRORS:
            result = sb.execute(cell)
            assert result.status == "error" and result.error is not None, cell
            assert result.error.ename == "PolicyViolation" and rule in result.error.evalue, result.error
            text = result.error.traceback
            assert not [w for w in HOST_INTERNALS if w in text], f"{cell!r} shows host internals:\n{text}"
            assert quoted in text and "PolicyViolation" in text, text
        # not a policy error, but it passes through the policy's open(): no guard frame either
        denied = sb.execute("open('/etc/shadow')")
        assert denied.error is not None and denied.error.ename == "PermissionError"
        assert "pixelbox/kernel" not in denied.error.traceback and "open('/etc/shadow')" in denied.error.traceback


def test_methodcaller_ops_are_traced_under_the_policy() -> None:
    with Sandbox(backend="local") as sb:
        result = sb.execute(
            "import operator\nfrom PIL import Image\nimg = Image.new('RGB', (40, 30))\n"
            "part = operator.methodcaller('crop', (5, 5, 25, 20))(img)\n"
        )
        assert result.status == "ok", result.error
        crops = [e for e in result.events if e["op"] == "crop"]
        assert [(e["params"]["box_px"], e["src"]["line"]) for e in crops] == [([5, 5, 25, 20], 4)]
        assert not result.tampered
