"""Sandboxes beside each other on the local backend: one kernel must not read another's task
inputs or kernel log (directory and file modes, the kernel's umask; as root a kernel's /tmp is its
own tmpfs, where another sandbox's directory does not even exist), with the policy and without
it (the operating system's permissions and mounts are the wall here, not the policy).
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from pixelbox.runtime import Sandbox
from tests.hardening.support import ESCAPED, LIMITS, Target, assert_contained, attempt, message

HARDENING_BACKENDS = ("local", "local-os")


def assert_neighbour_private(target: Target, tmp_path: Path) -> None:
    """Start a second local sandbox and try to read its inputs directory, input and log."""
    secret = tmp_path / "neighbour-secret.png"
    Image.new("RGB", (8, 8), (1, 2, 3)).save(secret)
    with Sandbox(backend="local", inputs=[secret], **LIMITS) as other:
        assert other.execute("print(1)").status == "ok"
        root = other.layout.root
        for path, how in (
            (root / "inputs", "import os\nprint(os.listdir({p!r}))"),
            (root / "inputs" / secret.name, "print(len(open({p!r}, 'rb').read()))"),
            (root / "kernel.log", "print(len(open({p!r}, 'rb').read()))"),
        ):
            result = target.run(attempt(how.format(p=str(path))))
            # as root the neighbour's directory does not exist in this kernel's /tmp: the I/O layer then
            # says no image is there (ImageNotFoundError), plain Python FileNotFoundError
            assert_contained(
                result,
                r"BLOCKED .*(PermissionError|Permission denied|denied-path|FileNotFoundError|ImageNotFoundError)",
            )
            assert ESCAPED not in result.stdout, message(result)
        assert (root / "kernel.log").stat().st_mode & 0o077 == 0
        made = other.execute("open('mine.txt', 'w').write('x')")
        assert made.status == "ok", message(made)
        assert (other.layout.work / "mine.txt").stat().st_mode & 0o077 == 0, "the kernel's umask must be 077"


def test_another_sandboxes_inputs_and_log_are_private(target: Target, tmp_path: Path) -> None:
    assert_neighbour_private(target, tmp_path)
