"""inspect_ai's ``--sandbox pixelbox``: a real ``inspect eval`` run, offline, on docker runc.

The task (``inspect_task.py``) is run by the ``inspect`` command line itself from a scratch
directory, with the provider found through pixelbox's ``inspect_ai`` entry point; its mock model
calls inspect's own ``bash`` and ``python`` tools and our ``pixelbox_python``. The eval log is then
read as inspect wrote it: each tool result must be what only our sandbox gives.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from conftest import require_backend

from pixelbox.runtime.backends import criu, restore

HERE = Path(__file__).parent
INSPECT = Path(sys.executable).parent / "inspect"


def run_eval(tmp_path: Path, config: dict[str, Any]) -> dict[str, Any]:
    """``inspect eval inspect_task.py --sandbox pixelbox:pixelbox.json`` in ``tmp_path``; its JSON log."""
    shutil.copy(HERE / "inspect_task.py", tmp_path / "inspect_task.py")
    (tmp_path / "pixelbox.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "OPENAI_", "ANTHROPIC_"))}
    command = [str(INSPECT), "eval", "inspect_task.py", "--sandbox", "pixelbox:pixelbox.json"]
    command += ["--log-dir", "logs", "--log-format", "json", "--display", "plain", "--no-log-images"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (log,) = (tmp_path / "logs").glob("*.json")
    return dict(json.loads(log.read_text()))


def tool_results(log: dict[str, Any]) -> list[tuple[str, Any]]:
    """Each tool message of the one sample: the tool's name and its content."""
    (sample,) = log["samples"]
    return [(m["function"], m["content"]) for m in sample["messages"] if m["role"] == "tool"]


@pytest.mark.docker
def test_inspect_eval_runs_each_tool_in_a_pixelbox_sandbox(tmp_path: Path) -> None:
    options = require_backend("runc")
    log = run_eval(tmp_path, {**options, "io": {"enabled": True, "profile": "generic"}})
    assert log["status"] == "success"
    assert log["eval"]["sandbox"]["type"] == "pixelbox"
    assert log["results"]["scores"][0]["metrics"]["accuracy"]["value"] == 1.0
    results = tool_results(log)
    assert [name for name, _ in results] == ["bash", "python", "bash", "pixelbox_python", "bash"]
    # bash wrote note.txt in the workspace as the container's unprivileged user
    assert results[0][1] == "1000\n/workspace\n"
    # python (a separate process) read the file the previous call wrote
    assert results[1][1] == "PIXEL-NOTE\n"
    # no network interface but loopback, every capability dropped
    assert results[2][1] == "lo\nCapEff:\t0000000000000000\n"
    # the traced kernel: the same file, the crop that ran with its box, the captured image
    text, image = results[3][1]
    assert text["type"] == "text" and image["type"] == "image"
    assert "pixel-note (64, 48)" in text["text"]
    assert "- crop (PIL.Image.Image.crop)" in text["text"] and "box_px=[8, 8, 40, 32]" in text["text"]
    assert "artifact 1: crop.png 32x24 (saved)" in text["text"]
    # the last command's files, its stderr, and no leftover of how commands ran
    assert results[4][1] == "err-line\ncrop.png\nnote.txt\n"
    exits = [e["result"] for e in log["samples"][0]["events"] if e["event"] == "sandbox" and e["action"] == "exec"]
    assert exits[-1] == 3


def test_sandbox_config_is_checked_before_any_sample() -> None:
    from pixelbox.plugins.inspect_sandbox import PixelboxConfig, PixelboxSandboxEnvironment
    from pixelbox.runtime.errors import OptionsError

    with pytest.raises(OptionsError, match="the fields are:"):
        asyncio.run(PixelboxSandboxEnvironment.task_init("t", PixelboxConfig(memroy="1g")))
    with pytest.raises(OptionsError, match="memory"):
        asyncio.run(PixelboxSandboxEnvironment.task_init("t", PixelboxConfig(memory="lots")))
    with pytest.raises(OptionsError, match="not a readable JSON file"):
        asyncio.run(PixelboxSandboxEnvironment.task_init("t", "/nonexistent/pixelbox.json"))
    config = PixelboxSandboxEnvironment.config_deserialize({"backend": "docker", "runtime": "runsc"})
    assert isinstance(config, PixelboxConfig) and config.options().runtime == "runsc"


def png(width: int, height: int) -> bytes:
    """A small PNG made here."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "red").save(out, format="PNG")
    return out.getvalue()


@pytest.mark.docker
@pytest.mark.parametrize("runtime", ["runc", pytest.param("runsc", marks=pytest.mark.runsc)])
def test_interface_errors_and_limits_as_inspect_documents_them(runtime: str) -> None:
    from inspect_ai.util import OutputLimitExceededError, SandboxUserUnsupportedError, override_sandbox_output_limit

    from pixelbox.plugins.inspect_sandbox import PixelboxConfig, PixelboxSandboxEnvironment

    config = PixelboxConfig(**require_backend(runtime))

    async def scenario() -> None:
        envs = await PixelboxSandboxEnvironment.sample_init("t", config, {})
        env = envs["default"]
        assert isinstance(env, PixelboxSandboxEnvironment)
        try:
            await env.write_file("sub/dir/a.bin", png(3, 2))
            assert await env.read_file("/workspace/sub/dir/a.bin", text=False) == png(3, 2)
            await env.write_file("crlf.txt", "a\r\nb")
            assert await env.read_file("crlf.txt") == "a\r\nb"
            done = await env.exec(["cat"], input="through stdin", cwd="sub")
            assert (done.success, done.stdout) == (True, "through stdin")
            done = await env.exec(["sh", "-c", 'echo "$GREETING" from "$PWD"'], env={"GREETING": "hi"}, cwd="sub")
            assert done.stdout == "hi from /workspace/sub\n"
            missing = await env.exec(["no-such-program"])
            assert (missing.success, missing.returncode) == (False, 127)
            with pytest.raises(FileNotFoundError):
                await env.read_file("absent.txt")
            with pytest.raises(IsADirectoryError):
                await env.read_file("sub")
            with pytest.raises(PermissionError, match="/workspace"):
                await env.read_file("/etc/passwd")
            with pytest.raises(PermissionError):
                await env.write_file("../escape.txt", "x")
            with pytest.raises(SandboxUserUnsupportedError):
                await env.exec(["id"], user="root")
            with pytest.raises(TimeoutError):
                await env.exec(["sleep", "30"], timeout=1)
            with override_sandbox_output_limit(1000), pytest.raises(OutputLimitExceededError) as over:
                await env.exec(["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x; echo END"])
            assert over.value.truncated_output is not None and over.value.truncated_output.endswith("xEND\n")
            with override_sandbox_output_limit(3, "read_file"), pytest.raises(OutputLimitExceededError):
                await env.read_file("crlf.txt")
            connection = await env.connection()
            enter = [word for word in shlex.split(connection.command)[:-2] if word != "-it"]  # no terminal here
            entered = subprocess.run([*enter, "id", "-u"], capture_output=True, text=True, timeout=120)
            prefixes = (["docker", "exec"], [restore.RUNSC, "--root"], [criu.RUNC, "--root"])
            assert enter[:2] in prefixes and entered.stdout == "1000\n"
            assert str(connection.container) in enter
            traced = env.sandbox.run_command(["true"])
            assert traced.events and traced.events[0]["op"] == "command"
            after = await env.exec(["sh", "-c", "ls -A"])
            assert after.stdout.split() == ["crlf.txt", "sub"]
        finally:
            await PixelboxSandboxEnvironment.sample_cleanup("t", config, envs, False)
        assert env.sandbox.closed

    asyncio.run(scenario())


def test_commands_on_the_local_backend_under_its_policy() -> None:
    """Commands run beside the kernel, so the local backend's policy (on by default) does not stand in the way."""
    from pixelbox.plugins.inspect_sandbox import PixelboxConfig, PixelboxSandboxEnvironment

    config = PixelboxConfig(**require_backend("local"))

    async def scenario() -> None:
        envs = await PixelboxSandboxEnvironment.sample_init("t", config, {})
        env = envs["default"]
        assert isinstance(env, PixelboxSandboxEnvironment) and env.sandbox.info.policy
        try:
            done = await env.exec(["sh", "-c", "cat; pwd"], input="in:")
            assert (done.returncode, done.stdout) == (0, f"in:{env.sandbox.paths.workspace}\n")
            assert not [p for p in env.sandbox.layout.ipc.iterdir() if p.name.startswith("stdin-")]
        finally:
            await PixelboxSandboxEnvironment.sample_cleanup("t", config, envs, False)

    asyncio.run(scenario())
