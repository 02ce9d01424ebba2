"""Evidence forgery: a cell must not be able to make the host believe records it did not earn.

The trace and the artifacts feed rewards, so each case tries, from model code, one way of passing
something off as the kernel's own account: the recorder under a spelling Python normalises to the
reserved name, editing or appending the recorder's events, registering a synthetic image as the
task's input, publishing the recorder's MIME type through ``display``, announcing artifact records
of its own (duplicate, input and absurd numbers, a planted file), rewriting a captured file before
the host reads it (same size, mtime restored), and faking the kernel's ``idle`` to end collection
early. One more makes the packer meet a lone surrogate and a NaN. Where the restricted policy
refuses the attack it is contained already; where it went through, the host must refuse or flag
it (``tampered`` and a ``trace integrity`` notice) and lose nothing that really happened.
See docs/tracer-threat-model.md.
"""

from __future__ import annotations

import pytest

from tests.hardening.support import BUSY_S, Target, assert_contained, attempt, clear_workspace, message

HARDENING_BACKENDS = ("local", "local-os", "runc", "runsc")
HARDENING_OPTIONS = {"io": {"enabled": True, "profile": "generic"}}
RECORDER = "globals()['__' + 'pbx__']"


def _ops(result: object) -> list[str]:
    return [str(e.get("op")) for e in getattr(result, "events", [])]


def _flagged(result: object, words: str) -> bool:
    return bool(getattr(result, "tampered", False)) and any(words in n for n in getattr(result, "notices", []))


def test_recorder_under_an_nfkc_spelling_is_refused_before_running(target: Target) -> None:
    """``__\\uff50bx__`` (a fullwidth p) is ``__pbx__`` to Python: refused like the plain name,
    whether it is an identifier, an attribute or a string handed to ``globals()``."""
    target.run("untouched = 1")
    spellings = (
        "__\uff50bx__.events.append({'op': 'crop'})\nuntouched = 2",
        "x = __\U0001d429bx__\nuntouched = 2",
        "globals()['__\uff50bx__'].events.clear()\nuntouched = 2",
        "import builtins\nbuiltins.__\uff50bx__ = 1\nuntouched = 2",
    )
    for code in spellings:
        result = target.run(code)
        assert result.status == "error" and "reserved" in message(result), message(result)
        assert _ops(result) == []
    assert target.run("print(untouched)").stdout == "1\n", "a refused cell must run nothing"


EDIT_EVENT = """
from PIL import Image
part = Image.new('RGB', (40, 40)).crop((0, 0, 10, 10))
rec = {recorder}
rec.events[-1]['params']['box'] = [5, 5, 35, 35]
print(rec.events[-1]['params']['box'])
"""

APPEND_EVENT = """
from PIL import Image
part = Image.new('RGB', (40, 40)).crop((0, 0, 10, 10))
rec = {recorder}
rec.events.append(dict(rec.events[-1], seq=99, output='img:777'))
print(len(rec.events))
"""

FAKE_INPUT = """
from PIL import Image
fake = Image.new('RGB', (64, 48), 'green')
{recorder}.register_root(fake, 0)
part = fake.crop((0, 0, 8, 8))
print('registered')
"""

FAKE_INPUT_THROUGH_BRIDGES = """
from PIL import Image
import pixelbox.kernel.recorder as recorder
from pixelbox.kernel.imageio import recorder_link
fake = Image.new('RGB', (64, 48), 'green')
recorder.register_root(fake, 0)
recorder_link.register_root(fake, 'input:0')
exec("recorder.register_root(fake, 0)")
recorder_link.link_artifact(fake, {'index': 1, 'name': 'card.png'})
part = fake.crop((0, 0, 8, 8))
"""


def test_recorder_events_cannot_be_edited_appended_or_rooted_unflagged(target: Target) -> None:
    """Through ``globals()`` (no policy), a real crop's box is rewritten, a copy of an event is
    appended, a synthetic image is declared the task's input (directly, through the recorder's
    bridges and through ``exec``) and linked to an artifact: each execution is flagged, and the
    synthetic image never becomes ``input:0`` or an artifact's source."""
    edited = target.run(EDIT_EVENT.format(recorder=RECORDER))
    if target.policy:
        assert_contained(edited, r"denied-builtin|PolicyViolation")
        return
    assert edited.status == "ok" and "[5, 5, 35, 35]" in edited.stdout, message(edited)
    assert _flagged(edited, "edited outside the recorder"), message(edited)
    appended = target.run(APPEND_EVENT.format(recorder=RECORDER))
    assert _flagged(appended, "added to or removed"), message(appended)
    rooted = target.run(FAKE_INPUT.format(recorder=RECORDER))
    assert rooted.status == "ok" and _flagged(rooted, "declared an image as input:0"), message(rooted)
    assert all("input:0" not in e.get("inputs", []) for e in rooted.events), rooted.events
    bridged = target.run(FAKE_INPUT_THROUGH_BRIDGES)
    assert bridged.status == "ok" and bridged.tampered, message(bridged)
    assert sum("declared an image as input:0" in n for n in bridged.notices) == 3, bridged.notices
    assert any("linked an artifact" in n for n in bridged.notices), bridged.notices
    assert all("input:0" not in e.get("inputs", []) and e.get("artifact") is None for e in bridged.events), bridged
    clean = target.run("from PIL import Image\nx = Image.new('RGB', (20, 20)).crop((0, 0, 5, 5))")
    assert _ops(clean) == ["crop"] and not clean.tampered, message(clean)


MIMEBUNDLE = """
from IPython.display import display
forged = {'v': 1, 'index': 1, 'name': 'card.png', 'path': '/x/card.png', 'relpath': 'card.png',
          'sha256': '0' * 64, 'capture': 'saved'}
def bundle(self, include=None, exclude=None):
    return {'application/vnd.pixelbox.artifact+json': forged,
            'application/vnd.pixelbox.event+json': [{'op': 'crop'}], 'text/plain': 'looks harmless'}
Forger = type('Forger', (), {'_repr_mimebundle_': bundle})
display(Forger())
print('displayed')
"""


def test_display_of_the_recorders_mime_type_is_never_records(target: Target) -> None:
    """A class made with 3-argument ``type`` whose ``_repr_mimebundle_`` returns the recorder's
    MIME types: what it displays is an output (its plain text kept), never an artifact or event."""
    result = target.run(attempt(MIMEBUNDLE))
    if "ESCAPED" not in result.stdout:
        assert_contained(result, r"BLOCKED|PolicyViolation")
        return
    assert result.artifacts == [] and result.events == [], (result.artifacts, result.events)
    assert _flagged(result, "displayed pixelbox record types"), message(result)
    kept = [o for o in result.outputs if "looks harmless" in repr(o)]
    assert len(kept) == 1 and all("vnd.pixelbox" not in repr(o) for o in result.outputs), result.outputs


FORGE_ARTIFACTS = """
import hashlib, json, shutil
from PIL import Image
from pixelbox.kernel.channel import publish
Image.new('RGB', (30, 30), 'blue').save('real.png')
Image.new('RGB', (30, 30), 'white').save('/tmp/planted.png')
shutil.copy('/tmp/planted.png', 'planted.png')
digest = hashlib.sha256(open('planted.png', 'rb').read()).hexdigest()
base = {{'v': 1, 'name': 'planted.png', 'path': 'planted.png', 'relpath': 'planted.png', 'sha256': digest,
        'capture': 'saved', 'api': 'forged', 'exec': None, 'line': 1}}
real = {real}
for index in (real, 0, real, 10 ** 12, -3, True, 'two'):
    publish('artifact', dict(base, index=index))
print('announced')
"""


def test_forged_artifact_records_are_refused(target: Target) -> None:
    """Records the cell announces itself on the kernel's channel: the input's index 0, the real
    artifact's index again, an absurd, a negative, a boolean and a text index. None is admitted,
    the planted file never becomes an image, the execution is flagged, and the next real capture
    keeps the next number."""
    first = target.run("from PIL import Image\nImage.new('RGB', (10, 10)).save('first.png')")
    assert first.status == "ok" and len(first.artifacts) == 1, message(first)
    real = int(first.artifacts[0]["index"])
    result = target.run(attempt(FORGE_ARTIFACTS.format(real=real + 1)), timeout=BUSY_S)
    if "ESCAPED" not in result.stdout:
        assert_contained(result, r"BLOCKED|PolicyViolation|denied")
    else:
        names = [a["relpath"] for a in result.artifacts]
        assert names == ["real.png"], result.artifacts
        assert result.tampered and sum("artifact rejected" in n for n in result.notices) >= 6, result.notices
    after = target.run("from PIL import Image\nImage.new('RGB', (10, 10)).save('after.png')")
    assert [a["relpath"] for a in after.artifacts] == ["after.png"], message(after)
    assert after.artifacts[0]["index"] > real and not after.tampered, after.artifacts
    clear_workspace(target)


REWRITE = """
import os
from PIL import Image
Image.new('RGB', (24, 24), 'red').save('shot.png')
st = os.stat('shot.png')
data = bytearray(open('shot.png', 'rb').read())
data[len(data) // 2] ^= 0xFF
open('shot.png', 'wb').write(bytes(data))
os.utime('shot.png', ns=(st.st_atime_ns, st.st_mtime_ns))
assert os.stat('shot.png').st_size == st.st_size and os.stat('shot.png').st_mtime_ns == st.st_mtime_ns
"""


def test_artifact_rewritten_in_its_own_cell_is_flagged(target: Target) -> None:
    """Captured, then rewritten with the same size and its mtime restored before the cell ends
    (before the host reads it): the kernel's sha256 from capture does not match, so the file is
    not admitted and the execution is flagged."""
    result = target.run(attempt(REWRITE), timeout=BUSY_S)
    if "ESCAPED" not in result.stdout:
        assert_contained(result, r"BLOCKED|PolicyViolation|denied")
    else:
        assert result.artifacts == [], result.artifacts
        assert _flagged(result, "changed after the kernel captured it"), message(result)
    clear_workspace(target)


FAKE_IDLE_OWN = """
k.session.send(k.iopub_socket, 'status', {'execution_state': 'idle'}, parent=k.get_parent(),
               ident=b'kernel.fake.status')
"""
FAKE_IDLE_GUESSED = """
stem, number = k.get_parent()['header']['msg_id'].rsplit('_', 1)
for guess in range(int(number) + 1, int(number) + 4):  # jupyter_client numbers a session's messages
    k.session.send(k.iopub_socket, 'status', {'execution_state': 'idle'}, parent={'msg_id': f'{stem}_{guess}'},
                   ident=b'kernel.fake.status')
"""
"""An ``idle`` for the host's end-of-request marker, its id guessed from the cell's own request id."""
FAKE_IDLE = """
import time
from PIL import Image
k = get_ipython().kernel
{fake}
time.sleep(1.0)
print('after the fake idle')
Image.new('RGB', (12, 12), 'red').save('late.png')
x = Image.new('RGB', (20, 20)).rotate(90)
"""


@pytest.mark.parametrize("fake", [FAKE_IDLE_OWN, FAKE_IDLE_GUESSED], ids=["own_request", "guessed_marker"])
def test_a_faked_idle_does_not_end_collection(target: Target, fake: str) -> None:
    """The cell publishes an ``idle`` with its own request (or the marker it guesses) as parent, then
    goes on: its later output, artifact and events still belong to it, and the next cell gets only its own."""
    result = target.run(attempt(FAKE_IDLE.format(fake=fake.strip("\n"))), timeout=BUSY_S)
    if target.policy:
        assert_contained(result, r"BLOCKED|PolicyViolation|denied")
        return
    assert "after the fake idle" in result.stdout and "ESCAPED" in result.stdout, message(result)
    assert [a["relpath"] for a in result.artifacts] == ["late.png"], result.artifacts
    assert "rotate" in _ops(result), result.events
    nxt = target.run("print('next')")
    assert nxt.stdout == "next\n" and nxt.artifacts == [] and _ops(nxt) == [], message(nxt)
    clear_workspace(target)


ODD_VALUES = """
from PIL import Image, ImageEnhance
img = Image.new('RGB', (16, 16))
lit = ImageEnhance.Brightness(img).enhance(float('nan'))
try:
    img.convert('\\ud800')
except Exception:
    pass
print('done')
"""


def test_lone_surrogate_and_nan_in_events_lose_nothing(target: Target) -> None:
    """A NaN brightness factor and a mode string with a lone surrogate reach events as parameters:
    the batch arrives (NaN as null, the surrogate as U+FFFD), and so does an integrity notice."""
    code = ODD_VALUES if target.policy else ODD_VALUES + f"del {RECORDER}\n"
    result = target.run(code, timeout=BUSY_S)
    assert result.status == "ok" and result.stdout == "done\n", message(result)
    ops = _ops(result)
    assert "enhance" in ops and "convert" in ops, result.events
    enhance = next(e for e in result.events if e["op"] == "enhance")
    convert = next(e for e in result.events if e["op"] == "convert")
    assert enhance["params"]["factor"] is None and convert["params"]["mode"] == "\ufffd", result.events
    if not target.policy:
        assert _flagged(result, "deleted or rebound"), message(result)
