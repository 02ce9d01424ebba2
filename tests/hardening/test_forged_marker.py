"""Ending collection with the host's own marker: a kernel that guesses the marker's id.

The host ends a cell's collection when the ``idle`` of its end-of-request marker (a request sent right
behind the cell) comes back. A kernel without the policy holds its session key and sees its parent
request's id; jupyter_client numbers a session's messages (``SESSION_PID_N``), so the marker sent right
after request ``N`` would be ``N + 1``. A cell that publishes an ``idle`` for that id and goes on must
not end collection: its later output, artifact and operations still belong to it.
"""

from __future__ import annotations

from tests.hardening.support import BUSY_S, Target, assert_contained, attempt, clear_workspace, message

HARDENING_BACKENDS = ("local", "local-os", "runc", "runsc")
HARDENING_OPTIONS = {"io": {"enabled": True, "profile": "generic"}}

GUESSED_MARKER_IDLE = """
import time
from PIL import Image
k = get_ipython().kernel
mine = k.get_parent()['header']['msg_id']
stem, number = mine.rsplit('_', 1)
for guess in range(int(number) + 1, int(number) + 4):
    k.session.send(k.iopub_socket, 'status', {'execution_state': 'idle'}, parent={'msg_id': f'{stem}_{guess}'},
                   ident=b'kernel.fake.status')
time.sleep(1.0)
print('after the guessed idle')
Image.new('RGB', (12, 12), 'red').save('late.png')
x = Image.new('RGB', (20, 20)).rotate(90)
"""


def test_an_idle_for_the_guessed_marker_does_not_end_collection(target: Target) -> None:
    result = target.run(attempt(GUESSED_MARKER_IDLE), timeout=BUSY_S)
    if target.policy:
        assert_contained(result, r"BLOCKED|PolicyViolation|denied")
        return
    assert "after the guessed idle" in result.stdout and "ESCAPED" in result.stdout, message(result)
    assert [a["relpath"] for a in result.artifacts] == ["late.png"], result.artifacts
    assert "rotate" in [str(e.get("op")) for e in result.events], result.events
    nxt = target.run("print('next')")
    assert nxt.stdout == "next\n" and nxt.artifacts == [], message(nxt)
    clear_workspace(target)
