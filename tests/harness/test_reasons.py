"""An episode's reason names what failed, never where this host keeps its files."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from pixelbox.harness.episode.reasons import failure_reason, without_host_paths
from pixelbox.runtime import Sandbox
from pixelbox.runtime.errors import KernelStartError


def test_os_errors_and_kernel_logs_lose_their_host_paths() -> None:
    sandbox_dir = f"{tempfile.gettempdir()}/pbx-4242-abc_12x/ipc/ready.json.tmp"
    reason = failure_reason("the sandbox failed: ", IsADirectoryError(21, "Is a directory", sandbox_dir))
    assert reason == "the sandbox failed: IsADirectoryError: [Errno 21] Is a directory: '<sandbox>/ipc/ready.json.tmp'"
    log = f'File "{sys.prefix}/lib/python3/site-packages/ipykernel/kernelapp.py", line 1\n{Path.cwd()}/x.py'
    text = without_host_paths(str(KernelStartError(f"the kernel exited before it was ready\n{log}")))
    assert sys.prefix not in text and str(Path.cwd()) not in text and "<python>/lib" in text


def test_a_real_sandbox_failure_reason_has_no_host_path(tmp_path: Path) -> None:
    """A download of a path that is a directory on the host fails with the sandbox's own words."""
    with Sandbox(backend="local") as sb:
        sb.execute("import os\nos.makedirs('d', exist_ok=True)")
        try:
            sb.download(str(sb.layout.work / "d"))
        except Exception as exc:  # what the episode loop would turn into its reason
            reason = failure_reason("the sandbox failed: ", exc)
        root = str(sb.layout.root)
    assert root not in reason and "/pbx-" not in reason, reason
