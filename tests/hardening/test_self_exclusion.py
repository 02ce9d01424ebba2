"""Self-exclusion from the score: a cell must not be able to end its own episode as an
infrastructure failure (which scoring leaves out and ``--retry-failed`` reruns).

Each case does from model code what the kernel can do to the host's side of the sandbox: plant
entries in the IPC directory that the next kernel start meets (a directory at the ready file's
temporary name, a symlink to a host file at the ready file's name), or send iopub messages that
do not deserialise (a bad signature, a body that is not JSON, a body of the wrong shape). The
sandbox must go on: the next kernel starts, ``execute`` returns a result that says the trace was
tampered with, and nothing the host read through a planted link reaches any message. The
scoring side (a forged event of the wrong shape, a damaged trace) is in
``tests/scoring/test_integrity.py``; an artifact deleted after capture in
``test_harness_faults.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hardening.support import Target, assert_contained, assert_usable, attempt, message

HARDENING_BACKENDS = ("local", "local-os", "runc", "runsc")
HARDENING_OPTIONS = {"io": {"enabled": True, "profile": "generic"}}
MARKER = "pbx-host-only-marker-7d1f"


@pytest.fixture
def host_file(tmp_path: Path) -> Iterator[Path]:
    """A host file only the host may read, holding a marker no result may ever contain."""
    path = tmp_path / "host-only.json"
    path.write_text('{"version": "' + MARKER + '"}')
    path.chmod(0o600)
    yield path


def plant(target: Target, body: str) -> None:
    """Run ``body`` (``ipc`` is the kernel's IPC directory), then restart the kernel as a crash would.

    Where the policy refuses the planting it is contained already; where it went through, the
    restart (the same start a crash or a stuck cell leads to) must not meet what was planted.
    """
    ipc = target.sb.paths.ipc
    result = target.run(attempt(f"import os\nipc = {ipc!r}\n{body}"))
    if "ESCAPED" not in result.stdout:
        assert_contained(result, r"BLOCKED .*(denied-path|PolicyViolation|denied)")
    target.sb.restart()


def test_directory_at_the_ready_files_temporary_name(target: Target) -> None:
    """Every later start writes ``ready.json.tmp``; a directory there used to fail each restart."""
    plant(target, "os.mkdir(os.path.join(ipc, 'ready.json.tmp'))\nos.mkdir(os.path.join(ipc, 'config.json.tmp'))")
    after = target.run("print('started again')")
    assert after.status == "ok" and after.stdout == "started again\n", message(after)
    assert_usable(target)


def test_symlink_at_the_ready_file_is_never_followed(target: Target, host_file: Path) -> None:
    """``ready.json`` replaced by a link to a host-only file (and a FIFO at the config's name):
    the next start must neither read through the link nor quote what is behind it."""
    body = (
        "os.unlink(os.path.join(ipc, 'ready.json'))\n"
        f"os.symlink({str(host_file)!r}, os.path.join(ipc, 'ready.json'))\n"
        "os.unlink(os.path.join(ipc, 'config.json'))\n"
        "os.mkfifo(os.path.join(ipc, 'config.json'))"
    )
    plant(target, body)
    after = target.run("print('started again')")
    assert after.status == "ok" and after.stdout == "started again\n", message(after)
    assert MARKER not in message(after)
    assert MARKER not in repr(target.sb.info.to_dict())


FORGE = """
k = get_ipython().kernel
sess = k.session
parent = k.get_parent()
h = sess.pack(sess.msg_header("stream"))
p = sess.pack(parent["header"])
sock = k.iopub_socket
sock.send_multipart([b"<IDS|MSG>", b"0" * 64, h, p, b"{}", sess.pack({"name": "stdout", "text": "forged"})])
for content in (b"\\xff not json", b"[1, 2, 3]", b'"text"'):
    body = [h, p, b"{}", content]
    sock.send_multipart([b"<IDS|MSG>", sess.sign(body), *body])
body = [sess.pack([1]), p, b"{}", b"{}"]
sock.send_multipart([b"<IDS|MSG>", sess.sign(body), *body])
print("sent")
"""


def test_malformed_and_badly_signed_iopub_messages(target: Target) -> None:
    """Frames that do not deserialise are dropped and said, never raised out of ``execute``."""
    target.run("kept = 5")
    result = target.run(attempt(FORGE))
    if target.policy:
        assert_contained(result, r"BLOCKED|PolicyViolation")
        return
    assert result.status == "ok" and "sent" in result.stdout, message(result)
    assert "forged" not in result.stdout, "a badly signed message was believed"
    assert result.tampered, message(result)
    assert any("not valid Jupyter messages" in n for n in result.notices), result.notices
    assert not result.state_lost
    assert target.run("print(kept)").stdout == "5\n"


def test_host_reads_of_the_ipc_directory_refuse_links(tmp_path: Path, host_file: Path) -> None:
    """The host's reader of kernel-written IPC files, on its own: a link, a FIFO and an oversized
    file are refused with a message that names neither the host path nor the content."""
    from pixelbox.runtime.errors import KernelStartError
    from pixelbox.runtime.protocol import READY_MAX_BYTES, wait_for_ready_file

    def refusal() -> str:
        with pytest.raises(KernelStartError) as caught:
            wait_for_ready_file(tmp_path, deadline=0.0, alive=lambda: True)
        return str(caught.value)

    (tmp_path / "ready.json").symlink_to(host_file)
    text = refusal()
    assert "symbolic link" in text and MARKER not in text and str(tmp_path) not in text, text
    (tmp_path / "ready.json").unlink()
    os.mkfifo(tmp_path / "ready.json")
    assert "not a plain file" in refusal()
    (tmp_path / "ready.json").unlink()
    (tmp_path / "ready.json").write_bytes(b" " * (READY_MAX_BYTES + 1))
    assert "over" in refusal()
    (tmp_path / "ready.json").write_text('{"version": [' + "[" * 5000)
    assert refusal() == "the kernel's ready file is not valid JSON"


@pytest.mark.parametrize("how", ["deleted", "rewritten"])
def test_artifact_changed_after_capture_is_not_kept(target: Target, tmp_path: Path, how: str) -> None:
    """The host hashed an artifact when its cell ended; the kernel then deletes it, or rewrites it
    with the same size and restores its mtime, before the harness copies it. The copy is refused
    (not silently downloaded again), the execution is flagged, and nothing raises: the episode goes
    on, scored on what it really produced."""
    from pixelbox.harness.episode.imagebook import ImageBook

    saved = target.run("from PIL import Image\nImage.new('RGB', (20, 10), 'red').save('evidence.png')")
    assert saved.status == "ok" and len(saved.artifacts) == 1, message(saved)
    change = (
        "import os\nos.remove('evidence.png')"
        if how == "deleted"
        else "import os\nst = os.stat('evidence.png')\ndata = bytearray(open('evidence.png', 'rb').read())\n"
        "data[-20] ^= 0xFF\nopen('evidence.png', 'wb').write(bytes(data))"
    )
    if how == "rewritten" and not target.policy:  # the policy refuses os.utime; the hash decides anyway
        change += "\nos.utime('evidence.png', ns=(st.st_atime_ns, st.st_mtime_ns))"
    changed = target.run(change)
    assert changed.status == "ok", message(changed)
    book = ImageBook(tmp_path / "images", [])
    assert book.ingest(target.sb, saved.artifacts, "code", execution=saved) == []
    said = "rewritten" if how == "rewritten" else "removed"
    assert saved.tampered and any(said in n for n in saved.notices), saved.notices
    assert len(book.problems) == 1 and not book.entries
    target.run("import os\nos.path.exists('evidence.png') and os.remove('evidence.png')")


def test_artifact_names_cannot_break_the_hosts_copy(target: Target, tmp_path: Path) -> None:
    """The name in an artifact record is the kernel's: ``..``, a NUL byte or a 300-character name
    (as a forged record would carry) is stored under a plain name instead of failing the episode."""
    from pixelbox.harness.episode.imagebook import ImageBook

    saved = target.run("from PIL import Image\nImage.new('RGB', (8, 8), 'blue').save('named.png')")
    assert len(saved.artifacts) == 1, message(saved)
    book = ImageBook(tmp_path / "images", [])
    for bad in ("..", ".", "a\x00b.png", "x" * 300 + ".png"):
        record = {**saved.artifacts[0].to_json(), "name": bad}
        book.entries.pop(record["index"], None)
        (entry,) = book.ingest(target.sb, [record], "code")
        assert entry.path.parent == tmp_path / "images" and entry.path.is_file(), entry
    target.run("import os\nos.remove('named.png')")
