"""The local backend refuses an interpreter its unprivileged kernel uids cannot reach, with the
message the README quotes up front (a venv made from a pyenv under /root cannot be used)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from pixelbox.runtime.backends.local import LocalBackend
from pixelbox.runtime.errors import BackendUnavailable

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
