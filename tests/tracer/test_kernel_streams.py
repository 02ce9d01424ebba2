"""The kernel's own output streams survive a cell that closes or replaces them.

Through a real local sandbox with the policy off (the policy does not let cells import ``sys``);
the Docker runtimes are covered by tests/hardening/test_lifecycle_faults.py.
"""

from __future__ import annotations

from pixelbox.runtime import Sandbox


def test_closed_and_replaced_streams_are_restored_with_a_notice() -> None:
    with Sandbox(backend="local", policy=False) as sb:
        closed = sb.execute("import sys\nsys.stdout.close()\nsys.stderr.close()")
        assert closed.status == "ok", closed.error
        after = sb.execute("import sys\nprint('still talking')\nprint('to stderr', file=sys.stderr)")
        assert after.status == "ok" and not after.state_lost, after.error
        assert (after.stdout, after.stderr) == ("still talking\n", "to stderr\n")
        assert [n for n in after.notices if "sys.stdout was closed" in n and "sys.stderr was closed" in n], after
        calm = sb.execute("print('again')")
        assert calm.stdout == "again\n" and calm.notices == []

        sb.execute("import io, sys\nsys.stdout = io.StringIO()")
        back = sb.execute("print('back')")
        assert back.stdout == "back\n" and [n for n in back.notices if "sys.stdout was replaced" in n], back

        fd = sb.execute("import os\nos.write(1, b'fd level\\n')")
        assert fd.stdout == "fd level\n", "the reopened stream must capture file descriptor 1 again"


def test_capture_magic_is_left_alone() -> None:
    """``%%capture`` runs its body as a nested cell while its own stdout is in place."""
    with Sandbox(backend="local", policy=False) as sb:
        captured = sb.execute("%%capture cap\nprint('hidden')")
        assert captured.stdout == "" and not [n for n in captured.notices if "sys.stdout" in n]
        shown = sb.execute("print(cap.stdout, end='')")
        assert shown.stdout == "hidden\n"
