"""The embedding API on real kernels (local, docker runc, docker runsc): streaming callbacks and
iterators, per-call environment, files in the sandbox's own directories, commands beside the
kernel; and the async twin kept in step with ``Sandbox`` signature for signature.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import BACKENDS, require_backend

from pixelbox.runtime import AsyncSandbox, Sandbox
from pixelbox.runtime.aio import AsyncSandboxFiles
from pixelbox.runtime.errors import WorkspacePathError
from pixelbox.runtime.files import SandboxFiles
from pixelbox.runtime.streaming import OutputEvent

SYNC_ONLY = {"mark_closed", "teardown"}
"""Pool plumbing: a pool retires a sandbox at once and stops it in the background."""


def _public(cls: type) -> dict[str, Any]:
    return {name: member for name, member in vars(cls).items() if not name.startswith("_") and name not in SYNC_ONLY}


@pytest.mark.parametrize(("sync", "twin"), [(Sandbox, AsyncSandbox), (SandboxFiles, AsyncSandboxFiles)])
def test_async_twin_has_every_public_member_with_the_same_parameters(sync: type, twin: type) -> None:
    ours, theirs = _public(sync), _public(twin)
    missing = sorted(set(ours) - set(theirs))
    assert not missing, f"{twin.__name__} lacks {missing}"
    for name, member in ours.items():
        other = theirs[name]
        if isinstance(member, property):
            assert isinstance(other, property), f"{name} is a property on {sync.__name__}, not on {twin.__name__}"
            continue
        assert list(inspect.signature(member).parameters.values()) == list(
            inspect.signature(other).parameters.values()
        ), f"{name}: {inspect.signature(member)} != {inspect.signature(other)}"
        if name != "stream":
            assert inspect.iscoroutinefunction(other), f"{twin.__name__}.{name} must be a coroutine"


@pytest.fixture(scope="module", params=list(BACKENDS))
def sb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """One sandbox per backend for the whole module (with an input image), closed at the end."""
    from PIL import Image

    image = tmp_path_factory.mktemp("inputs") / "card.png"
    Image.new("RGB", (20, 10), "blue").save(image)
    with Sandbox(inputs=[image], timeout=60, **require_backend(request.param)) as sandbox:
        yield sandbox


def test_callbacks_see_output_before_the_cell_ends(sb: Sandbox) -> None:
    """The cell waits for a file that only the on_stdout callback writes: it ends only if the
    first chunk reached the host while it ran."""
    seen: list[str] = []
    outputs: list[Any] = []

    def on_stdout(text: str) -> None:
        seen.append(text)
        if "first" in text:
            sb.files.write("go.txt", "go")

    code = (
        "import os, time\nprint('first', flush=True)\n"
        "deadline = time.monotonic() + 50\n"
        "while not os.path.exists('go.txt') and time.monotonic() < deadline:\n    time.sleep(0.02)\n"
        "print('released' if os.path.exists('go.txt') else 'never released')\n"
        "import warnings; warnings.warn('warn')\n"
        "from IPython.display import display\ndisplay('shown')\n"
    )
    errors: list[str] = []
    result = sb.execute(code, on_stdout=on_stdout, on_stderr=errors.append, on_output=outputs.append)
    assert result.ok, result.error
    assert "released" in "".join(seen) and result.stdout == "".join(seen)
    assert "warn" in "".join(errors)
    assert [o.data.get("text/plain") for o in outputs] == ["'shown'"] and outputs == result.outputs
    sb.files.remove("go.txt")


def test_a_failing_callback_is_dropped_and_said_so(sb: Sandbox) -> None:
    calls: list[str] = []

    def boom(text: str) -> None:
        calls.append(text)
        raise RuntimeError("callback broke")

    result = sb.execute("print('a', flush=True)\nimport time; time.sleep(0.2)\nprint('b')", on_stdout=boom)
    assert result.ok and result.stdout == "a\nb\n"
    assert len(calls) == 1 and any("on_stdout callback raised RuntimeError" in n for n in result.notices)


def test_stream_yields_events_then_the_result(sb: Sandbox) -> None:
    events = list(sb.stream("print('x')\n41 + 1"))
    kinds = [e.kind for e in events]
    assert kinds[-1] == "result" and "stdout" in kinds and "output" in kinds
    final = events[-1].execution
    assert final is not None and final.text == "42" and final.text() == "42"


def test_env_holds_for_one_cell_only(sb: Sandbox) -> None:
    code = "import os\nprint(os.environ.get('PBX_ONE'), os.environ.get('LANG'))"
    assert sb.execute(code, env={"PBX_ONE": "1", "LANG": "fr"}).stdout == "1 fr\n"
    assert sb.execute(code).stdout == "None C.UTF-8\n"
    with pytest.raises(ValueError, match="not a valid variable name"):
        sb.execute("1", env={"A=B": "x"})


def test_files_list_read_write_remove(sb: Sandbox) -> None:
    files = sb.files
    workspace, inputs = sb.paths.workspace, sb.paths.inputs
    assert files.write("notes/a.txt", "hello") == f"{workspace}/notes/a.txt"
    assert sb.execute("print(open('notes/a.txt').read())").stdout == "hello\n"
    assert sb.run_command(["sh", "-c", "mkdir -p notes/deep && printf 12345 > notes/deep/b.bin"]).ok
    listed = {(f.path, f.kind, f.size) for f in files.list("notes", recursive=True)}
    assert {(f"{workspace}/notes/a.txt", "file", 5), (f"{workspace}/notes/deep/b.bin", "file", 5)} <= listed
    assert (f"{workspace}/notes/deep", "dir") in {(p, k) for p, k, _ in listed}
    assert files.read(f"{workspace}/notes/deep/b.bin") == b"12345"
    assert [f.name for f in files.list(inputs)] == ["card.png"] and files.read(f"{inputs}/card.png")[:4] == b"\x89PNG"
    files.remove("notes")
    assert not files.exists("notes") and files.exists("")
    with pytest.raises(WorkspacePathError, match="read-only"):
        files.write(f"{inputs}/x.png", b"no")
    with pytest.raises(WorkspacePathError, match="outside the sandbox"):
        files.read("/etc/passwd")
    with pytest.raises(WorkspacePathError, match=r"'\.\.'"):
        files.read("../kernel.log")


def test_files_never_follow_links_the_kernel_planted(sb: Sandbox) -> None:
    planted = sb.run_command(["sh", "-c", "mkdir -p trap && ln -s /etc trap/etc && ln -s /etc/passwd pw"])
    assert planted.ok, planted.stderr
    entries = {f.name: f.kind for f in sb.files.list()}
    assert entries["pw"] == "link" and entries["trap"] == "dir"
    assert [f.kind for f in sb.files.list("trap", recursive=True)] == ["link"]
    for path in ("pw", "trap/etc/passwd"):
        with pytest.raises(WorkspacePathError):
            sb.files.read(path)
    with pytest.raises(WorkspacePathError):
        sb.files.list("trap/etc")
    sb.files.remove("pw")
    sb.files.remove("trap")
    assert os.path.exists("/etc/passwd") and not sb.files.exists("trap")


def test_run_command_runs_beside_the_kernel_as_its_user(sb: Sandbox) -> None:
    uid = sb.info.kernel["uid"]
    whoami = sb.run_command(["id", "-u"])
    assert whoami.ok and whoami.stdout.strip() == str(uid)
    failed = sb.run_command(["sh", "-c", "echo out; echo err >&2; echo $PBX_X; exit 3"], env={"PBX_X": "seen"})
    assert (failed.exit_code, failed.stdout, failed.stderr, failed.ok) == (3, "out\nseen\n", "err\n", False)
    (event,) = failed.events
    assert event["op"] == "command" and event["status"] == "error" and event["exec"] == failed.index
    assert event["params"]["argv"][0] == "sh" and event["params"]["env"] == ["PBX_X"]
    assert "seen" not in str(event)
    missing = sb.run_command(["no-such-program-pbx"])
    assert missing.exit_code == 127 and not missing.ok
    sb.run_command(["sh", "-c", "echo from-command > made.txt"])
    after = sb.execute("print(open('made.txt').read().strip())")
    assert after.stdout == "from-command\n" and not after.tampered and after.index == missing.index + 2


def test_run_command_stops_at_its_deadline(sb: Sandbox) -> None:
    slow = sb.run_command(["sleep", "60"], timeout=1)
    assert slow.timed_out and slow.exit_code is None and not slow.ok
    assert slow.events[0]["params"]["timed_out"] is True
    assert sb.execute("print('still here')").stdout == "still here\n"


def test_async_twin_streams_and_runs_tools(backend: dict[str, Any]) -> None:
    async def main() -> tuple[list[OutputEvent], Any, Any, list[str]]:
        async with await AsyncSandbox.create(**backend) as asb:
            events = [event async for event in asb.stream("print('a')\nfrom PIL import Image\nImage.new('L', (4, 4))")]
            tool = await asb.call_tool("crop", {"image_index": 1, "bbox_2d": [0, 0, 500, 500]})
            command = await asb.run_command(["true"])
            await asb.files.write("t.txt", "x")
            names = [f.name for f in await asb.files.list()]
            return events, tool, command, names

    events, tool, command, names = asyncio.run(main())
    assert [e.kind for e in events][-1] == "result" and events[0].kind == "stdout"
    final = events[-1].execution
    assert final is not None and [a.width for a in final.artifacts] == [4]
    assert tool.ok, tool.error
    assert command.ok and "t.txt" in names
