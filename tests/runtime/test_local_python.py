"""The local backend refuses an interpreter its unprivileged kernel uids cannot reach, with the
message the README quotes up front (a venv made from a pyenv under /root cannot be used), and runs
kernels from a venv under /tmp (which the kernel's private /tmp shows read-only, and nothing else of
the host's /tmp)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import BACKENDS, BackendEntry
from pixelbox.runtime.backends import zygote as zygotes
from pixelbox.runtime.backends.local import LocalBackend
from pixelbox.runtime.errors import BackendUnavailable
from pixelbox.runtime.options import SandboxOptions

README = Path(__file__).resolve().parents[2] / "README.md"
README_PATH = "/root/project/.venv/bin/python"
"""The interpreter path the README's quote shows."""
KERNEL_UID = 65534


def test_private_interpreter_is_refused_with_the_message_the_readme_quotes(tmp_path: Path) -> None:
    private = tmp_path / "home"
    bin_dir = private / ".pyenv" / "versions" / "3.11" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python3.11"
    shutil.copy2(Path(sys.executable).resolve(), python)
    private.chmod(0o700)  # like /root
    LocalBackend()._check_reachable(KERNEL_UID)  # the test venv itself is reachable (setup.sh makes it so)
    with pytest.raises(BackendUnavailable) as caught:
        LocalBackend(python=str(python))._check_reachable(KERNEL_UID)
    message = str(caught.value).replace(str(python), README_PATH)
    readme = " ".join(README.read_text().split())
    assert f"BackendUnavailable: {' '.join(message.split())}" in readme
    assert os.access(python, os.X_OK), "root can still run it: only other uids are refused"


class TmpVenvBackend(LocalBackend):
    """The local backend, its kernels run by the Python of a venv made under /tmp."""

    name = "tmp-venv-local"
    python_path: ClassVar[str] = ""

    @classmethod
    def for_options(cls, options: SandboxOptions) -> LocalBackend:
        return cls(python=cls.python_path)


@pytest.fixture
def tmp_venv() -> Iterator[Path]:
    """A venv under /tmp (as a CI checkout's would be) whose site-packages reach this one's (a .pth)."""
    root = Path(tempfile.mkdtemp(prefix="pbx-venv-", dir="/tmp"))
    try:
        root.chmod(0o755)
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site = root / "venv" / "lib" / version / "site-packages"
        (site / "host.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
        yield root / "venv"
    finally:
        shutil.rmtree(root, ignore_errors=True)


PROBE = """import os, sys
print(sys.prefix)
print(os.path.exists({secret!r}), os.path.exists({sibling!r}))
mounts = [line.split() for line in open('/proc/self/mounts')]
print([m[3].split(',')[0] for m in mounts if m[1] == {venv!r}])
print(sorted({{m[1] for m in mounts if m[1].startswith('/tmp/')}}))
"""


@pytest.mark.parametrize("fast_start", [True, False], ids=["fast", "cold"])
def test_a_kernel_runs_from_a_venv_under_tmp_and_sees_nothing_else_there(tmp_venv: Path, fast_start: bool) -> None:
    """Kernels get a private /tmp; the venv their Python lives in is bound back read-only, a
    world-readable sibling directory of the host's /tmp stays out of sight."""
    sibling = Path(tempfile.mkdtemp(prefix="pbx-sibling-", dir="/tmp"))
    secret = sibling / "secret.txt"
    secret.write_text("the host's")
    for path, mode in ((sibling, 0o755), (secret, 0o644)):
        path.chmod(mode)  # readable by any uid: only the private /tmp hides it
    TmpVenvBackend.python_path = str(tmp_venv / "bin" / "python")
    BACKENDS.add(TmpVenvBackend.name, BackendEntry(TmpVenvBackend.name, f"{__name__}:TmpVenvBackend", "a test double"))
    try:
        with (
            Sandbox(backend="local") as neighbour,
            Sandbox(backend=TmpVenvBackend.name, policy=False, fast_start=fast_start, timeout=120) as sandbox,
        ):
            probe = PROBE.format(secret=str(secret), sibling=str(sibling), venv=str(tmp_venv))
            result = sandbox.execute(probe)
            start = sandbox.start_path
            own, other = str(sandbox.layout.root), str(neighbour.layout.root)
    finally:
        BACKENDS.remove(TmpVenvBackend.name)
        zygotes.stop_all()  # the venv's zygote goes with the venv (later tests expect only their own)
        shutil.rmtree(sibling, ignore_errors=True)
    assert result.status == "ok", result
    prefix, seen, mounts, below_tmp = result.stdout.splitlines()
    assert prefix == str(tmp_venv)
    assert start == ("fast" if fast_start else "cold")
    if os.geteuid() == 0:  # a private /tmp (without root the kernel shares the host's)
        assert seen == "False False", "the host's /tmp shows through beside the venv"
        assert mounts == "['ro']", f"the venv is not bound read-only: {mounts}"
        points = ast.literal_eval(below_tmp)
        assert other not in points and all(p == str(tmp_venv) or p.startswith(own) for p in points), points
