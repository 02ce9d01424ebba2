"""Fresh kernels from the local fast path (the zygote) are as clean and isolated as cold ones.

Real kernels throughout: each test forks kernels from this process's real zygote and probes them
from inside (policy off, so the operating-system walls are what is tested) and from the host
(``/proc``, the zygote's memory). What one sandbox did must never be visible to the next, every
random source must differ between fresh sandboxes, the zygote must hold nothing of any sandbox,
and the ``fast_start`` option must turn the path off.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pixelbox.runtime import Sandbox, SandboxPool
from pixelbox.runtime.backends import zygote as zygotes

LOCAL: dict[str, Any] = {"backend": "local", "policy": False}

DIRTY = r"""
import colorsys, os, random, sys
import numpy
secret = "sandbox-a-variable-secret"
open("left.txt", "w").write("sandbox-a-file-secret")
open("/tmp/pbx-fresh-test-" + str(os.getpid()), "w").write("sandbox-a-tmp-secret")
open("/dev/shm/pbx-fresh-test", "w").write("sandbox-a-shm-secret")
os.environ["LEFT_BEHIND"] = "sandbox-a-env-secret"
colorsys.rgb_to_hsv = lambda *a: "patched by sandbox a"
numpy.pi = 3.0
random.seed(1234)
numpy.random.seed(1234)
sys.modules["planted_by_a"] = type(sys)("planted_by_a")
print(os.getpid())
"""

PROBE = r"""
import colorsys, glob, json, os, sys
import numpy
seen = {
    "variable": "secret" in globals(),
    "file": os.path.exists("left.txt"),
    "tmp": glob.glob("/tmp/pbx-fresh-test-*"),
    "shm": os.path.exists("/dev/shm/pbx-fresh-test"),
    "env": os.environ.get("LEFT_BEHIND"),
    "env_a": os.environ.get("ONLY_A"),
    "stdlib_patched": colorsys.rgb_to_hsv(0, 0, 0) != (0.0, 0.0, 0.0),
    "numpy_patched": numpy.pi != 3.141592653589793,
    "module": "planted_by_a" in sys.modules,
}
print(json.dumps(seen))
"""

RANDOMS = r"""
import json, multiprocessing, os, random, tempfile, uuid
import cv2, numpy
print(json.dumps({
    "random": random.random(),
    "numpy": float(numpy.random.rand()),
    "cv2": int(cv2.randu(numpy.zeros(1, numpy.uint32), 0, 2**31 - 1)[0]),
    "urandom": os.urandom(16).hex(),
    "uuid4": str(uuid.uuid4()),
    "tempname": next(tempfile._get_candidate_names()),
    "authkey": bytes(multiprocessing.current_process().authkey).hex(),
}))
"""


SETUP = r"""
import json, sys
import ipykernel.ipkernel
from ipykernel.kernelapp import IPKernelApp
from IPython.core.interactiveshell import InteractiveShell
ip = get_ipython()
app = IPKernelApp.instance()
print(json.dumps({
    "shell_is_the_singleton": ip is InteractiveShell.instance() and ip.kernel is app.kernel,
    "ipython_dir": ip.ipython_dir,
    "profile_dir": ip.profile_dir.location,
    "connection_file": app.connection_file,
    "config": {name: {k: str(v) for k, v in section.items()} for name, section in app.config.items()},
    "argv": app.argv,
    "history": ip.history_manager.enabled,
    "xmode": ip.InteractiveTB.mode,
    "main_is_the_user_module": sys.modules["__main__"] is ip.user_module,
    "user_names": sorted(name for name in ip.user_ns if not name.startswith("_")),
    "ipython_builtin": __IPYTHON__,
    "execution_count": ip.execution_count,
    "debugger_module_list": ipykernel.ipkernel.sys is sys and app.kernel._kernel_modules,
}))
"""


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-of-the-fresh-tests")
    yield


def _run(sb: Sandbox, code: str) -> str:
    result = sb.execute(code, timeout=60)
    assert result.status == "ok", (result.status, result.error, result.stderr)
    return result.stdout


def _clean(seen: dict[str, Any]) -> None:
    assert seen == {
        "variable": False,
        "file": False,
        "tmp": [],
        "shm": False,
        "env": None,
        "env_a": None,
        "stdlib_patched": False,
        "numpy_patched": False,
        "module": False,
    }


def test_the_fast_path_is_taken_and_the_kernel_is_confined() -> None:
    """A kernel forked from the zygote runs as its own unprivileged uid, network-isolated, and reads
    like a cold kernel in ``/proc`` (so leak checks and ``pixelbox cleanup`` find it)."""
    with Sandbox(**LOCAL) as sb:
        assert sb.start_path == "fast"
        info = sb.info
        pid = info.kernel["pid"]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        assert f"-m pixelbox.kernel --ipc-dir {sb.layout.ipc}" in cmdline
        parent = int(re.search(r"PPid:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))  # type: ignore[union-attr]
        assert parent in {z["pid"] for z in zygotes.running()}
        assert info.kernel["start"] == "fast"
        if os.geteuid() == 0:
            assert info.kernel["uid"] not in (0, os.getuid())
            assert info.isolation["network_isolated"] is True
            assert "private tmpfs" in info.isolation["dev_shm"]
        assert _run(sb, "import os\nprint(os.getcwd())").strip() == str(sb.layout.work)
        status = dict(
            line.split(":", 1)
            for line in _run(sb, "print(open('/proc/self/status').read())").splitlines()
            if ":" in line
        )
        assert status["NoNewPrivs"].strip() == "1"
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0
        if os.geteuid() == 0:
            assert status["Groups"].strip() == ""
            assert status["Uid"].split() == [str(info.kernel["uid"])] * 4


def test_nothing_of_one_sandbox_reaches_the_next(secret_env: None) -> None:
    """Variables, workspace files, /tmp and /dev/shm files, environment variables, patched modules and
    planted modules of sandbox A are invisible to B, both while A runs and after it closed."""
    first = Sandbox(env={"ONLY_A": "sandbox-a-option-secret"}, **LOCAL)
    try:
        assert first.start_path == "fast"
        _run(first, DIRTY)
        with Sandbox(**LOCAL) as during:
            assert during.start_path == "fast"
            _clean(json.loads(_run(during, PROBE)))
    finally:
        first.close()
    with Sandbox(**LOCAL) as after:
        assert after.start_path == "fast"
        _clean(json.loads(_run(after, PROBE)))
        host_env = _run(after, "import os\nprint(os.environ.get('OPENAI_API_KEY'))")
        assert host_env == "None\n"


@pytest.mark.parametrize("path", ["fast", "cold"])
def test_random_state_differs_between_fresh_sandboxes(path: str) -> None:
    """Every random source is reseeded per kernel, forked or cold (OpenCV seeds itself with a
    constant on import): no two fresh kernels draw the same numbers."""
    draws = []
    for _ in range(3):
        with Sandbox(**LOCAL, fast_start=path == "fast") as sb:
            assert sb.start_path == path
            draws.append(json.loads(_run(sb, RANDOMS)))
    for source in draws[0]:
        values = [d[source] for d in draws]
        assert len(set(values)) == len(values), f"{source} repeated across fresh sandboxes: {values}"


def test_a_forked_kernel_is_set_up_like_a_cold_one() -> None:
    """What the zygote prepares before the fork (the kernel's parsed options, a throwaway shell that
    warms IPython's caches) leaves a forked kernel set up exactly as a cold one: its own shell, its
    sandbox's IPython directory and connection file, the same configuration and user namespace."""
    facts = {}
    for path in ("fast", "cold"):
        with Sandbox(**LOCAL, fast_start=path == "fast") as sb:
            assert sb.start_path == path
            facts[path] = json.loads(_run(sb, SETUP).replace(str(sb.layout.root), "<sandbox>"))
    assert facts["fast"] == facts["cold"]
    assert facts["fast"]["shell_is_the_singleton"] and facts["fast"]["main_is_the_user_module"]
    assert facts["fast"]["ipython_dir"] == "<sandbox>/home/.ipython"
    assert facts["fast"]["connection_file"] == "<sandbox>/ipc/kernel.json"
    assert facts["fast"]["debugger_module_list"] == []  # not made (no debugger), and ipkernel's sys is back


FIRST_SAVE = r"""
import json, sys
from PIL import Image
before = set(sys.modules)
Image.new("RGB", (64, 48), (200, 10, 10)).save("first.webp")
Image.new("L", (8, 8)).save("first.tiff")
imported = sorted(m for m in set(sys.modules) - before if m.startswith("PIL."))
print(json.dumps({"imported": imported, "size": Image.open("first.webp").size, "first": Image.ID[:6]}))
"""


def test_a_fresh_kernels_first_save_imports_no_format_plugin() -> None:
    """Pillow's format plugins are imported in phase one (a first save or an open outside its five start-up
    formats would import all of them: most of that cell's cost under gVisor), so a forked kernel's first
    saves import no plugin, they write what a cold kernel's write, and an open tries the five common formats
    first, as in a cold kernel whose first image is one of them (``preinit``; DIB comes with BMP)."""
    seen = {}
    for path in ("fast", "cold"):
        with Sandbox(**LOCAL, fast_start=path == "fast") as sb:
            assert sb.start_path == path
            seen[path] = json.loads(_run(sb, FIRST_SAVE))
    assert seen["fast"]["imported"] == [] and seen["fast"]["size"] == [64, 48]
    assert "PIL.WebPImagePlugin" in seen["cold"]["imported"] and seen["cold"]["size"] == [64, 48]
    assert set(seen["fast"]["first"]) == {"BMP", "DIB", "GIF", "JPEG", "PPM", "PNG"}


def test_the_zygotes_preload_leaves_one_thread_and_no_shell(tmp_path: Path) -> None:
    """The zygote forks, so after its preload it must hold no thread, no IPython singleton and nothing
    its throwaway shell set on the interpreter (builtins, ``__main__``, prompts, exit hooks)."""
    script = (
        "import atexit, builtins, json, sys, threading\n"
        "before = (set(vars(builtins)), sys.modules['__main__'], atexit._ncallbacks())\n"
        "from pixelbox.kernel.fresh import preload\n"
        "from pixelbox.kernel.kernelapp import SandboxKernelApp\n"
        "missing = preload()\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "from ipykernel.kernelapp import IPKernelApp\n"
        "print(json.dumps({'missing': missing, 'threads': threading.active_count(),\n"
        "    'builtins': sorted(set(vars(builtins)) ^ before[0]), 'main': sys.modules['__main__'] is before[1],\n"
        "    'prompts': hasattr(sys, 'ps1'), 'shell': InteractiveShell.initialized(),\n"
        "    'app': IPKernelApp.initialized(), 'remembered': len(SandboxKernelApp._parsed)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {
        "missing": [],
        "threads": 1,
        "builtins": [],
        "main": True,
        "prompts": False,
        "shell": False,
        "app": False,
        "remembered": 1,
    }


def test_remembered_options_configure_the_app_as_the_parser_does() -> None:
    """A forked kernel takes the options the zygote parsed: the same configuration, connection file and
    command line as a parse of its own; other command lines still go through the parser."""
    from pixelbox.kernel.fresh import KERNEL_ARGS
    from pixelbox.kernel.kernelapp import SandboxKernelApp

    def parsed(argv: list[str]) -> SandboxKernelApp:
        app = SandboxKernelApp()
        app.parse_command_line(argv)
        SandboxKernelApp.clear_instance()
        return app

    argv = ["-f", "/sandbox/ipc/kernel.json", *KERNEL_ARGS]
    SandboxKernelApp._parsed.clear()
    parser = parsed(argv)
    SandboxKernelApp.remember_options(KERNEL_ARGS)
    try:
        remembered = parsed(argv)
        assert remembered.config == parser.config and remembered.cli_config == parser.cli_config
        assert remembered.connection_file == "/sandbox/ipc/kernel.json" == parser.connection_file
        assert remembered.argv == parser.argv and remembered.extra_args == parser.extra_args == []
        other = parsed(["-f", "/x/kernel.json", "--InteractiveShell.xmode=Context"])
        assert other.config.InteractiveShell.xmode == "Context"
    finally:
        SandboxKernelApp._parsed.clear()


def _memory_holds(pid: int, needles: list[bytes]) -> list[bytes]:
    """Which of ``needles`` occur anywhere in the readable memory of process ``pid`` (root only)."""
    found: set[bytes] = set()
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or "[vvar" in line or "[vsyscall" in line:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            found.update(n for n in needles if n in chunk)
    return sorted(found)


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root")
def test_the_zygote_never_holds_a_sandbox_secret() -> None:
    """Neither the environment a sandbox is given nor its connection key ever enter the zygote's
    memory (the forked child reads its request itself), so no later kernel can inherit them."""
    secret = "pbx-env-secret-" + os.urandom(8).hex()
    with Sandbox(env={"API_TOKEN": secret}, **LOCAL) as sb:
        assert sb.start_path == "fast"
        assert _run(sb, "import os\nprint(os.environ['API_TOKEN'])").strip() == secret
        key = sb.connection_info["key"]
        needles = [secret.encode(), key.encode() if isinstance(key, str) else bytes(key)]
        kernel_pid = sb.info.kernel["pid"]
        assert _memory_holds(kernel_pid, needles), "the probe must see the secret where it is"
        for zygote in zygotes.running():
            assert _memory_holds(zygote["pid"], needles) == [], "the zygote holds a sandbox's secret"
            if zygote["ready"] and zygote["alive"]:
                spare = _spare_of(zygote["pid"])  # forked after this sandbox's start, waiting for the next
                assert _memory_holds(spare, needles) == [], "the next sandbox's spare holds this one's secret"


def test_each_fresh_kernel_signs_with_its_own_sandboxs_key() -> None:
    """The connection key is read after the request, never ahead: each kernel's session holds exactly
    its sandbox's key, and two fresh sandboxes' keys differ."""
    keys = []
    for _ in range(2):
        with Sandbox(**LOCAL) as sb:
            assert sb.start_path == "fast"
            held = _run(sb, "print(get_ipython().kernel.session.key.decode())").strip()
            assert held == sb.connection_info["key"]
            keys.append(held)
    assert keys[0] != keys[1]


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:"):
            inodes.add(target)
    return inodes


@pytest.mark.skipif(os.geteuid() != 0, reason="kernels share the host uid without root")
def test_a_kernel_holds_nothing_of_the_zygote_and_cannot_reach_it() -> None:
    """The forked kernel keeps none of the zygote's descriptors (its listener, other kernels'
    connections) and cannot connect to the zygote's socket (in a directory only the host enters, which
    the kernel's private /tmp does not even show)."""
    with Sandbox(**LOCAL) as first, Sandbox(**LOCAL) as sb:
        assert first.start_path == sb.start_path == "fast"
        (zygote,) = [z for z in zygotes.running() if z["ready"]]
        shared = _socket_inodes(sb.info.kernel["pid"]) & _socket_inodes(zygote["pid"])
        assert shared == set()
        probe = (
            "import socket\ns = socket.socket(socket.AF_UNIX)\n"
            f"try:\n    s.connect({zygote['root'] + '/sock'!r}); print('REACHED')\n"
            "except OSError as exc:\n    print(type(exc).__name__)"
        )
        assert _run(sb, probe).strip() in ("PermissionError", "FileNotFoundError")  # private /tmp: not even seen


def _spares_of(zygote: int) -> list[int]:
    """The zygote's children that are not kernels yet (still showing the zygote's command line), but its
    rehearsal (:mod:`pixelbox.kernel.prefault`), which shows it too while it runs."""
    from pixelbox.kernel.prefault import REHEARSAL_NAME

    spares = []
    for entry in Path("/proc").iterdir():
        try:
            ppid = int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = entry.joinpath("cmdline").read_bytes()
            name = entry.joinpath("comm").read_bytes().strip()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == zygote and zygotes.ZYGOTE_MODULE.encode() in cmdline and name != REHEARSAL_NAME:
            spares.append(int(entry.name))
    return spares


def _await_waiting(spare: int) -> None:
    """Until the spare has done its work ahead (groups, pages, namespaces) and waits on its link."""
    deadline = time.monotonic() + 60
    while Path(f"/proc/{spare}/wchan").read_text() != "unix_stream_read_generic" and time.monotonic() < deadline:
        time.sleep(0.01)


def _namespaces(pid: int) -> dict[str, str]:
    """The network and IPC namespaces of process ``pid`` (``net:[inode]``)."""
    return {kind: os.readlink(f"/proc/{pid}/ns/{kind}") for kind in ("net", "ipc")}


def test_the_spare_waits_with_nothing_becomes_the_next_kernel_and_goes_with_the_zygote() -> None:
    """The zygote forks the next kernel ahead of its request (the spare): waiting, it holds nothing of
    the zygote but its link (no listener, no kernel's connection), in network and IPC namespaces of its
    own made ahead (shared with no other process); the next sandbox's kernel is that process, in those
    namespaces; and when the zygote dies the spare goes too."""
    with Sandbox(**LOCAL) as first:
        assert first.start_path == "fast"
        (zygote,) = [z for z in zygotes.running() if z["ready"]]
        deadline = time.monotonic() + 60
        while not (spares := _spares_of(zygote["pid"])) and time.monotonic() < deadline:
            time.sleep(0.05)
        (spare,) = spares

        def held() -> list[int]:
            return sorted(int(fd.name) for fd in Path(f"/proc/{spare}/fd").iterdir())

        _await_waiting(spare)
        assert _socket_inodes(spare) & _socket_inodes(zygote["pid"]) == set()
        assert held()[:3] == [0, 1, 2] and len(held()) == 4 and len(_socket_inodes(spare)) == 1  # stdio, its link
        namespaces = _namespaces(spare)  # made ahead, empty: its own, not the zygote's nor a kernel's
        assert not set(namespaces.values()) & set(_namespaces(zygote["pid"]).values())
        assert not set(namespaces.values()) & set(_namespaces(first.info.kernel["pid"]).values())
        with Sandbox(**LOCAL) as second:
            assert second.start_path == "fast" and second.info.kernel["pid"] == spare
            assert _run(second, "print('from the spare')") == "from the spare\n"
            assert _namespaces(spare) == namespaces
            while not (spares := _spares_of(zygote["pid"])) and time.monotonic() < deadline:
                time.sleep(0.05)
            (next_spare,) = spares
            _await_waiting(next_spare)
            assert not set(_namespaces(next_spare).values()) & set(namespaces.values())
            os.kill(zygote["pid"], signal.SIGKILL)
            while not _dead(next_spare) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _dead(next_spare), "the spare outlived its zygote"
            assert _run(second, "print('still here')") == "still here\n"


def _groups_of(pid: int) -> dict[str, str]:
    """Controller -> the cgroup v1 path process ``pid`` is in (from ``/proc/<pid>/cgroup``)."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return {
        controller: path
        for _, controllers, path in (line.split(":", 2) for line in lines)
        for controller in controllers.split(",")
    }


def _spare_of(zygote: int) -> int:
    deadline = time.monotonic() + 60
    while not (spares := _spares_of(zygote)) and time.monotonic() < deadline:
        time.sleep(0.05)
    (spare,) = spares
    _await_waiting(spare)
    return spare


def test_the_spare_joins_a_group_ahead_that_becomes_the_sandboxs_with_its_limits() -> None:
    """On cgroup v1 the spare waits in control groups of its own, made ahead without limits (joining one
    can wait for an RCU grace period: no sandbox pays it). The next sandbox's kernel is in that group,
    renamed to the sandbox's and given exactly the sandbox's limits before the kernel read its request;
    closing removes it; a spare's group is no leftover while the zygote lives and is removed with it."""
    from pixelbox.runtime.backends.cgroups import pixelbox_groups, spare_parents
    from pixelbox.runtime.cleanup import leftovers_of

    if not spare_parents():
        pytest.skip("spare kernels join groups ahead on cgroup v1 as root only")
    memory, cpus, pids = 700 * 1024**2, 0.5, 77
    with Sandbox(**LOCAL) as first:
        assert first.start_path == "fast"
        (zygote,) = [z for z in zygotes.running() if z["ready"]]
        spare = _spare_of(zygote["pid"])
        waiting = _groups_of(spare)
        prefix = f"/pixelbox/{Path(zygote['root']).name}-spare-"
        assert all(waiting[c].startswith(prefix) for c in ("memory", "cpuacct", "cpu", "pids")), waiting
        spare_memory = Path("/sys/fs/cgroup/memory" + waiting["memory"])
        assert int((spare_memory / "memory.limit_in_bytes").read_text()) > 2**60  # no limit while it waits
        assert not any(prefix in group for group in leftovers_of(os.getpid()).get("cgroups", []))
        with Sandbox(memory=memory, cpus=cpus, pids=pids, **LOCAL) as second:
            assert second.start_path == "fast" and second.info.kernel["pid"] == spare
            name = f"/pixelbox/{second.layout.root.name}"
            assert set(_groups_of(spare)[c] for c in ("memory", "cpuacct", "cpu", "pids")) == {name}
            assert not spare_memory.exists()
            group = Path("/sys/fs/cgroup/memory" + name)
            assert int((group / "memory.limit_in_bytes").read_text()) == memory
            assert int((group / "memory.memsw.limit_in_bytes").read_text()) == memory
            assert Path(f"/sys/fs/cgroup/cpu{name}/cpu.cfs_quota_us").read_text().strip() == "50000"
            assert Path(f"/sys/fs/cgroup/pids{name}/pids.max").read_text().strip() == str(pids)
            assert _run(second, "print(open('/proc/self/cgroup').read().count('" + name + "'))") != "0\n"
            assert second.kernel_cpu_seconds()
        assert pixelbox_groups(second.layout.root.name) == []
    zygotes.stop_all()
    assert pixelbox_groups(f"{Path(zygote['root']).name}-spare-") == []


def _private_dirty(pid: int) -> int:
    """Bytes of memory process ``pid`` has written and holds alone (``/proc/<pid>/smaps_rollup``)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Private_Dirty:"):
            return int(line.split()[1]) * 1024
    return 0


def test_the_spare_writes_ahead_what_a_kernel_writes_and_the_rehearsal_leaves_nothing() -> None:
    """Once the zygote's rehearsal (a throwaway kernel start in the zygote's own directory) has reported
    which pages a starting kernel writes, every spare writes them while it waits: they are its own
    (private, dirty) and, on cgroup v1, charged to its group, which becomes the sandbox's. The
    rehearsal leaves no directory and no process; the kernel made from the spare works."""
    from pixelbox.runtime.backends.cgroups import spare_parents

    with Sandbox(**LOCAL) as first:
        assert first.start_path == "fast"
        (zygote,) = [z for z in zygotes.running() if z["ready"]]
        rehearsal = Path(zygote["root"]) / "rehearsal"
        deadline = time.monotonic() + 120
        while rehearsal.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not rehearsal.exists(), "the rehearsal's directory is left behind"
        with Sandbox(**LOCAL) as second:  # takes the spare forked before the report; the next one uses it
            spare = _spare_of(zygote["pid"])
            while _private_dirty(spare) < 8 * 1024**2 and time.monotonic() < deadline:
                time.sleep(0.05)
            written = _private_dirty(spare)
            assert written >= 8 * 1024**2, f"the spare wrote only {written} bytes ahead"
            children = {
                int(p) for p in Path(f"/proc/{zygote['pid']}/task/{zygote['pid']}/children").read_text().split()
            }
            assert children == {first.info.kernel["pid"], second.info.kernel["pid"], spare}, "a rehearsal outlived it"
            if spare_parents():
                group = Path("/sys/fs/cgroup/memory" + _groups_of(spare)["memory"])
                assert int((group / "memory.usage_in_bytes").read_text()) >= 8 * 1024**2  # what it wrote ahead
            with Sandbox(**LOCAL) as third:
                assert third.info.kernel["pid"] == spare
                assert _run(third, "print(6 * 7)") == "42\n"


def test_without_word_that_its_kernel_started_the_zygote_still_makes_the_next_spare() -> None:
    """The zygote forks the next spare once the host says the kernel it handed over has started (a
    spare made during that start would slow it), and when no word comes, after a while regardless."""
    from pixelbox.runtime.backends.local import LocalBackend
    from pixelbox.runtime.options import SandboxOptions
    from pixelbox.runtime.workspace import Layout

    with Sandbox(**LOCAL) as first:
        assert first.start_path == "fast"
        (zygote,) = [z for z in zygotes.running() if z["ready"]]
        spare = _spare_of(zygote["pid"])
        backend = LocalBackend()
        uid = backend.allocate_uid()
        layout = Layout.create(uid)
        handle = None
        try:
            handle = backend.start_fresh(layout, SandboxOptions(**LOCAL), uid)  # nobody says it started
            assert handle is not None and handle.proc.pid == spare  # type: ignore[attr-defined]
            deadline = time.monotonic() + 60
            while not [p for p in _spares_of(zygote["pid"]) if p != spare] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [p for p in _spares_of(zygote["pid"]) if p != spare], "no next spare without word"
        finally:
            if handle is not None:
                handle.kill()
            layout.remove()


def test_fast_start_off_starts_cold_and_the_pool_refills_fast() -> None:
    """``fast_start=False`` starts cold; a pool's refills come from the fast path by default."""
    with Sandbox(fast_start=False, **LOCAL) as sb:
        assert sb.start_path == "cold"
        assert sb.info.kernel["start"] == "cold"
    with SandboxPool(1, backend="local") as pool:
        for _ in range(2):
            with pool.sandbox(timeout=120) as sb:
                assert sb.start_path == "fast"
                assert _run(sb, "print(1 + 1)") == "2\n"
    with SandboxPool(1, backend="local", fast_start=False) as pool, pool.sandbox(timeout=120) as sb:
        assert sb.start_path == "cold"


def test_a_forked_kernel_crash_is_reported_and_replaced() -> None:
    """A forked kernel that dies says how (its exit code comes from the zygote) and the next cell
    gets a fresh kernel, again from the fast path."""
    with Sandbox(**LOCAL) as sb:
        crashed = sb.execute("import os\nos._exit(3)")
        assert crashed.status == "crashed"
        assert crashed.crash_reason == "exited with code 3"
        again = sb.execute("print('back')")
        assert again.status == "ok" and again.stdout == "back\n" and again.restarted
        assert sb.start_path == "fast"


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_kernels_outlive_a_dead_zygote_and_the_next_sandbox_gets_a_new_one() -> None:
    """Killing the zygote leaves running kernels working and closable; the next sandbox starts a new
    zygote (the first start waits for it, then forks)."""
    from pixelbox.runtime.backends.cgroups import pixelbox_groups

    with Sandbox(**LOCAL) as sb:
        assert sb.start_path == "fast"
        killed = zygotes.running()
        for zygote in killed:
            os.kill(zygote["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not all(_dead(z["pid"]) for z in zygotes.running()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _run(sb, "print('still here')") == "still here\n"
        with Sandbox(**LOCAL) as after:
            assert after.start_path == "fast"
            assert _run(after, "print(2)") == "2\n"
        for zygote in killed:  # its spare's groups, which it could not remove, went with its replacement
            assert pixelbox_groups(f"{Path(zygote['root']).name}-spare-") == []


def test_cleanup_removes_the_spare_groups_of_a_dead_owner_whose_zygote_was_killed() -> None:
    """A host and its zygote both SIGKILLed leave the spare's control groups (nobody could remove them);
    their names carry the owner, so ``pixelbox cleanup`` removes them once the owner is dead."""
    from pixelbox.runtime.backends.cgroups import pixelbox_groups, spare_parents
    from pixelbox.runtime.cleanup import remove_leftovers_of

    if not spare_parents():
        pytest.skip("spare kernels join groups ahead on cgroup v1 as root only")
    script = (
        "import time\nfrom pixelbox.runtime import Sandbox\nfrom pixelbox.runtime.backends import zygote\n"
        "sb = Sandbox(backend='local')\nsb.execute('1')\n(z,) = zygote.running()\n"
        "print(z['pid'], z['root'], flush=True)\ntime.sleep(600)\n"
    )
    host = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        pid, root = host.stdout.readline().split()
        prefix = f"{Path(root).name}-spare-"
        deadline = time.monotonic() + 60
        while not pixelbox_groups(prefix) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(pid), signal.SIGKILL)
    finally:
        host.kill()
        host.wait()
    assert pixelbox_groups(prefix), "a SIGKILLed zygote cannot remove its spare's groups"
    remove_leftovers_of(host.pid)  # scoped: never another test session's dead hosts
    assert pixelbox_groups(prefix) == []


def test_a_zygote_that_fails_to_start_leaves_kernels_cold() -> None:
    """A zygote that dies before it listens is a failure: sandboxes start cold at once instead of each
    waiting on a new zygote, until the retry delay has passed."""
    from pixelbox.runtime.backends.local import LocalBackend
    from pixelbox.runtime.options import SandboxOptions

    zygotes.stop_all()
    try:
        LocalBackend().prepare_fresh(SandboxOptions(**LOCAL))
        (zygote,) = zygotes.running()
        os.kill(zygote["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not zygotes.running()[0]["failure"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert zygotes.running()[0]["failure"], zygotes.running()
        with Sandbox(**LOCAL) as sb:
            assert sb.start_path == "cold"
            assert _run(sb, "print(3)") == "3\n"
    finally:
        zygotes.stop_all()
