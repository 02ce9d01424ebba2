"""Resource abuse: CPU, memory, processes, threads, disk, output floods and descriptors.

Limits are small (see ``support.LIMITS``: 512 MiB, 64 pids, 48 MiB tmpfs, 64 MiB per file,
96 MiB of host disk, 256 descriptors, 40 rich outputs, 8,000 characters per stream) so every
bomb ends fast.
Expected outcomes: the deadline or limit stops the attack, the agent is told which, the host
keeps only capped data, and the sandbox answers afterwards (replaced when it had to be).
"""

from __future__ import annotations

import os

from tests.hardening.support import LIMITS, Target, assert_contained, assert_replaced, clear_workspace, message

HARDENING_OPTIONS = {"io": {"enabled": False}}
"""These cases drive the rich-output path (displayed images kept as outputs, capped and written by the
host); image capture, on by default, would turn those images into artifacts, whose limits the
evidence-forgery and self-exclusion cases cover."""


def test_cpu_spin_in_c_regex_backtracking(target: Target) -> None:
    target.run("kept = 'still here'")
    result = target.run("import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')")
    assert result.status == "timeout", message(result)
    assert "deadline" in result.notices[0]
    if result.state_lost:
        assert_replaced(result, target)
    else:
        assert target.run("print(kept)").stdout == "still here\n"


def test_cpu_spin_in_one_long_numpy_call(target: Target) -> None:
    """One C call (LAPACK) that never checks for signals: the interrupt cannot land in time."""
    result = target.run("import numpy as np\nnp.linalg.eigvals(np.random.rand(2500, 2500))")
    assert result.status == "timeout", message(result)
    assert result.state_lost and result.restarted, message(result)
    assert "ignored the interrupt" in result.notices[0] and "variables were lost" in result.notices[0]
    assert_replaced(result, target)


def test_memory_bomb_in_one_numpy_allocation(target: Target) -> None:
    # the deadline is not under test: a busy machine can take longer than 3 s to fault in 512 MiB
    result = target.run("import numpy as np\nblock = np.ones((1024, 1024, 1024), dtype=np.uint8)", timeout=60)
    assert result.status == "crashed", message(result)
    assert result.crash_reason is not None and result.crash_reason.startswith("OOM-killed"), message(result)
    assert "512 MiB" in result.crash_reason
    assert_replaced(result, target)


def test_memory_bomb_in_a_child_process(target: Target) -> None:
    code = """
    import subprocess, sys
    bomb = "x = []\\nwhile True:\\n    x.append(bytearray(64 * 1024 * 1024))"
    done = subprocess.run([sys.executable, '-c', bomb], capture_output=True, timeout=20)
    print('child exit', done.returncode)
    """
    result = target.run(code, timeout=25)
    if target.policy:
        assert_contained(result, r"denied-module")
    elif result.status == "crashed":  # the OOM killer may pick the kernel instead of the child
        assert result.crash_reason and result.crash_reason.startswith("OOM-killed"), message(result)
        assert_replaced(result, target)
    else:
        assert result.status == "ok", message(result)
        code_ = int(result.stdout.split()[-1])
        assert code_ != 0, "the child's memory bomb must not succeed"


def test_shell_fork_bomb(target: Target) -> None:
    code = """
    import subprocess, time
    subprocess.Popen(['sh', '-c', 'b(){ b | b & }; b'])
    time.sleep(2)
    print('bomb running')
    """
    result = target.run(code, timeout=5)
    if target.policy:
        assert_contained(result, r"denied-module")
        return
    # the pids limit stops the bomb; the kernel may survive it, time out, or go down with it
    assert result.status in ("ok", "timeout", "crashed", "error"), message(result)
    if result.status != "ok":
        assert message(result).strip(), "the agent must be told how the cell ended"
    # a surviving kernel still has the bomb's processes: replace it, as a harness would
    target.sb.restart()
    assert target.run("print('usable')").stdout == "usable\n"


def test_thread_bomb(target: Target) -> None:
    code = """
    import threading
    stop = threading.Event()
    made = 0
    try:
        for i in range(5000):
            threading.Thread(target=stop.wait, args=(20,), daemon=True).start()
            made += 1
    except Exception as exc:
        print('STOPPED', repr(exc))
    stop.set()
    print('made', made)
    """
    result = target.run(code)
    if target.policy:
        assert_contained(result, r"denied-module")
    elif result.status == "ok":
        assert "can't start new thread" in result.stdout, message(result)
        assert int(result.stdout.split()[-1]) < LIMITS["pids"]
    else:  # gVisor blocks thread creation at the pids limit instead of failing it
        assert result.status == "timeout", message(result)
        target.run("stop.set()")


WORKSPACE_CAP = 96 * 1024**2


def filler(paths: str, mib_each: int, keep: bool = False) -> str:
    """A cell writing 1 MiB at a time to each file in ``paths`` (a Python expression) until the
    disk says no; it prints the MiB written and removes the files unless ``keep``."""
    cleanup = "pass" if keep else "for path in made: os.remove(path)"
    return f"""
    import os, tempfile
    written, made = 0, []
    try:
        for path in {paths}:
            made.append(path)
            with open(path, 'wb') as handle:
                for _ in range({mib_each}):
                    handle.write(bytes(1024 * 1024))
                    handle.flush()
                    written += 1
    except OSError as exc:
        print('STOPPED', repr(exc))
    {cleanup}
    print('MiB', written)
    """


def assert_usable_after_clearing(target: Target) -> None:
    clear_workspace(target)
    assert target.run("open('after.txt', 'w').write('x')\nprint('usable')").stdout == "usable\n"
    clear_workspace(target)


def test_disk_fill_of_the_temp_directory(target: Target) -> None:
    result = target.run(filler("[os.path.join(tempfile.gettempdir(), 'fill.bin')]", 200))
    reason = r"File too large" if not target.docker else r"No space left on device"
    assert_contained(result, reason)
    assert int(result.stdout.split()[-1]) <= 64


def test_disk_fill_of_the_workspace_stops_at_the_file_size_limit(target: Target) -> None:
    result = target.run(filler("['fill.bin']", 200, keep=True))
    assert_contained(result, r"File too large")
    assert (target.sb.layout.work / "fill.bin").stat().st_size <= 64 * 1024**2
    assert_usable_after_clearing(target)


def test_disk_fill_with_many_files_stops_at_the_workspace_cap(target: Target) -> None:
    """Each file stays under the per-file limit; together they would fill the host's disk."""
    result = target.run(filler("[f'fill_{i}.bin' for i in range(40)]", 8, keep=True), timeout=30)
    assert_contained(result, r"No space left on device")
    assert target.sb.info.isolation["workspace_quota"] == f"{WORKSPACE_CAP} bytes (tmpfs)"
    on_host = sum(entry.stat().st_size for entry in os.scandir(target.sb.layout.work))
    assert on_host <= WORKSPACE_CAP and int(result.stdout.split()[-1]) < 96
    show = "from IPython.display import display\nfrom PIL import Image\ndisplay(Image.new('RGB', (64, 64)))"
    shown = target.run(show)
    assert shown.status == "ok", message(shown)  # the host could not store the image either: it says so
    assert "dropped: not saved (No space left on device)" in shown.outputs[0].data["image/png"]
    assert_usable_after_clearing(target)


def test_inode_exhaustion_stops_at_the_workspace_cap(target: Target) -> None:
    code = """
    import os
    os.mkdir('many')
    made = 0
    try:
        for i in range(20_000):
            open(f'many/{i}', 'w').close()
            made += 1
    except OSError as exc:
        print('STOPPED', repr(exc))
    print('files', made)
    """
    result = target.run(code, timeout=60)
    assert_contained(result, r"No space left on device")
    assert int(result.stdout.split()[-1]) < 20_000
    assert_usable_after_clearing(target)


def test_stdout_and_stderr_floods_are_capped(target: Target) -> None:
    code = "print('o' * 20_000_000)\nimport warnings\nwarnings.warn('e' * 5_000_000)"
    result = target.run(code)
    assert result.status == "ok", message(result)
    assert len(result.stdout) < LIMITS["stdout_cap"] + 200 and result.stdout_truncated > 19_000_000
    assert "characters of stdout truncated" in result.stdout
    assert len(result.stderr) < LIMITS["stderr_cap"] + 200 and result.stderr_truncated > 4_000_000


def test_endless_output_until_the_deadline(target: Target) -> None:
    result = target.run("while True:\n    print('y' * 1000)")
    assert result.status == "timeout", message(result)
    assert len(result.stdout) < LIMITS["stdout_cap"] + 200 and result.stdout_truncated > 0


def test_thousands_of_display_outputs(target: Target) -> None:
    code = """
    from PIL import Image
    from IPython.display import display
    for i in range(400):
        display(Image.new('RGB', (8, 8), (i % 256, 0, 0)))
    """
    result = target.run(code, timeout=30)
    assert result.status == "ok", message(result)
    assert len(result.outputs) == LIMITS["max_outputs"]
    assert result.outputs_dropped == 400 - LIMITS["max_outputs"]
    written = {str(p) for p in target.sb.layout.outputs.glob(f"exec{result.index:04d}_*")}
    kept = {path for output in result.outputs for path in output.files.values()}
    assert written == kept, "dropped outputs must not reach the host disk"


def test_giant_image_output_is_dropped_with_a_marker(target: Target) -> None:
    code = """
    import base64
    from IPython.display import display
    display({'image/png': base64.b64encode(bytes(40 * 1024 * 1024)).decode()}, raw=True)
    """
    result = target.run(code, timeout=30)
    assert result.status == "ok", message(result)
    assert len(result.outputs) == 1 and result.outputs[0].files == {}
    assert "dropped" in result.outputs[0].data["image/png"]
    assert not list(target.sb.layout.outputs.glob(f"exec{result.index:04d}_*.png"))


def test_huge_repr_and_error_message_are_capped(target: Target) -> None:
    shown = target.run("'x' * 10_000_000", timeout=60)  # the cap is asserted, not the speed
    assert shown.status == "ok" and len(shown.text) < 40_000 and "truncated" in shown.text
    raised = target.run("raise ValueError('E' * 10_000_000)", timeout=60)
    assert raised.status == "error" and raised.error is not None
    assert raised.error.ename == "ValueError"
    assert len(raised.error.evalue) < 20_000 and "truncated" in raised.error.evalue
    assert len(raised.error.traceback) < 20_000


def test_file_descriptor_exhaustion(target: Target) -> None:
    code = """
    held = []
    try:
        for i in range(100000):
            held.append(open('/dev/null'))
    except OSError as exc:
        print('STOPPED', repr(exc), len(held))
    """
    result = target.run(code)
    assert_contained(result, r"Too many open files")
    still = target.run("print(len(held))")  # the kernel keeps working with every descriptor taken
    assert still.status == "ok" and int(still.stdout) < LIMITS["max_open_files"], message(still)
    target.run("for handle in held:\n    handle.close()\nheld = []")
