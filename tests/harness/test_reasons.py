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


def test_an_episode_whose_sandbox_cannot_start_says_why_without_host_paths(tmp_path: Path) -> None:
    """A kernel that cannot start (too few descriptors for its sockets) ends the episode with the
    start error and the kernel log's traceback as its reason: every host path in them is replaced."""
    from pixelbox.harness.agents import AgentTurn, ReplayAgent
    from pixelbox.harness.episode.loop import EpisodeConfig, run_episode
    from pixelbox.harness.traces import RunDirectory
    from tests.harness.episodes import make_task

    task = make_task(tmp_path / "data")
    run = RunDirectory.open(tmp_path / "run", {"model": "replay", "mode": "gen"})

    def make_sandbox(task: object) -> Sandbox:
        return Sandbox(backend="local", max_open_files=8, start_timeout=30)

    with run.start_episode(task.task_id) as writer:
        outcome = run_episode(
            task,
            ReplayAgent([AgentTurn(text="<answer>red</answer>")]),
            make_sandbox=make_sandbox,
            config=EpisodeConfig(mode="gen"),
            writer=writer,
            images_dir=tmp_path / "images",
        )
    assert outcome.status == "runtime_error" and outcome.reason, outcome
    assert "Too many open files" in outcome.reason and "<python>" in outcome.reason, outcome.reason
    for host_path in (sys.prefix, str(Path.cwd()), str(Path(__file__).resolve().parents[2]), "/pbx-"):
        assert host_path not in outcome.reason, (host_path, outcome.reason)
