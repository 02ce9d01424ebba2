"""Host access: secrets, host files, other sandboxes, inputs, and link/traversal tricks
through upload/download. The kernel controls its workspace, so everything the *host* does
there (upload, download, cleanup) must treat it as hostile.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path

import pytest

from pixelbox.runtime import Sandbox, WorkspacePathError
from tests.hardening.support import HOST_SECRET, Target, assert_contained, attempt, clear_workspace, message

HARDENING_BACKENDS = ("local", "local-os", "runc", "runsc")
LINKS_DENIED = r"policy rule: (no-links|denied-os-function)"
DENIED = r"PolicyViolation|policy rule|PermissionError|Permission denied|Read-only file system|FileNotFoundError"


def test_read_etc_shadow(target: Target) -> None:
    result = target.run(attempt("data = open('/etc/shadow').read()\nprint(len(data))"))
    assert_contained(result, DENIED)


def test_init_process_environment_holds_no_host_secret(target: Target) -> None:
    result = target.run(attempt("data = open('/proc/1/environ', 'rb').read()\nprint(data)"))
    assert HOST_SECRET not in result.stdout
    if target.docker:  # pid 1 is the container's own init: readable, but it never saw the host env
        assert result.stdout.startswith("b'"), message(result)
    else:  # host init: root-only, and /proc is off limits under the policy
        assert_contained(result, DENIED)


def test_host_secret_is_in_no_visible_process_environment(target: Target) -> None:
    """Scan os.environ and every readable /proc/*/environ and cmdline (the parent's included)."""
    code = f"""
    import os
    found = [k for k, v in os.environ.items() if {HOST_SECRET!r} in v]
    readable = 0
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        for leaf in ('environ', 'cmdline'):
            try:
                data = open('/proc/' + pid + '/' + leaf, 'rb').read()
            except Exception:
                continue
            readable += 1
            if {HOST_SECRET.encode()!r} in data:
                found.append(pid + '/' + leaf)
    print('readable', readable, 'found', found)
    """
    result = target.run(code)
    assert HOST_SECRET not in message(result)
    assert result.status == "ok", message(result)
    assert "found []" in result.stdout, message(result)
    readable = int(result.stdout.split()[1])
    if not target.policy:  # the scan really looked (on local-os it sees the host's processes too)
        assert readable > 0, message(result)


def test_docker_socket_is_out_of_reach(target: Target) -> None:
    code = """
    import socket
    for path in ('/var/run/docker.sock', '/run/docker.sock'):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            s.sendall(b'GET /containers/json HTTP/1.0' + bytes([13, 10, 13, 10]))
            print('ESCAPED', s.recv(64))
        except Exception as exc:
            print('BLOCKED', path, repr(exc))
    """
    assert_contained(target.run(code), r"FileNotFoundError|PermissionError|policy rule: no-network|PolicyViolation")


def test_signalling_the_host_process(target: Target) -> None:
    """The kernel may not signal the process that drives it (or any host process)."""
    host_pid = os.getpid()
    result = target.run(attempt(f"import os, signal\nos.kill({host_pid}, signal.SIGTERM)"))
    assert_contained(result, r"PolicyViolation|denied-os-function|PermissionError|ProcessLookupError|not permitted")


def test_writes_outside_the_workspace(target: Target) -> None:
    repo = Path(__file__).resolve().parents[2]
    paths = ["/etc/pbx-hardening", "/usr/lib/pbx-hardening", "/root/pbx-hardening", str(repo / "pbx-hardening")]
    code = f"""
    for path in {paths!r}:
        try:
            open(path, 'w').write('owned')
            print('ESCAPED', path)
        except Exception as exc:
            print('BLOCKED', path, repr(exc))
    """
    result = target.run(code)
    assert_contained(result, r"PermissionError|Read-only file system|FileNotFoundError|PolicyViolation")
    assert result.stdout.count("BLOCKED") == len(paths), message(result)
    for path in paths:
        assert not Path(path).exists(), f"{path} was written on the host"


def test_another_sandboxs_workspace(target: Target) -> None:
    with Sandbox(backend="local", policy=False) as other:
        secret = other.layout.work / "theirs.txt"
        other.execute("open('theirs.txt', 'w').write('private to the other sandbox')")
        assert secret.read_text() == "private to the other sandbox"
        code = f"""
        print(open({str(secret)!r}).read())
        open({str(secret)!r}, 'w').write('overwritten')
        """
        result = target.run(attempt(code))
        assert_contained(result, DENIED)
        assert "private to" not in result.stdout
        assert secret.read_text() == "private to the other sandbox"


def test_inputs_cannot_be_modified(target: Target) -> None:
    name = target.sb.inputs[0]
    host_copy = target.sb.layout.inputs / name
    before = hashlib.sha256(host_copy.read_bytes()).hexdigest()
    inside = f"{target.sb.paths.inputs}/{name}"
    code = f"""
    import os
    attacks = {{
        'write': lambda: open({inside!r}, 'r+b').write(b'x'),
        'truncate': lambda: open({inside!r}, 'wb'),
        'chmod': lambda: os.chmod({inside!r}, 0o666),
        'unlink': lambda: os.remove({inside!r}),
        'rename': lambda: os.rename({inside!r}, {inside!r} + '.moved'),
        'replace': lambda: (open('evil.png', 'wb').write(b'x'), os.replace('evil.png', {inside!r})),
    }}
    for what, attack in attacks.items():
        try:
            attack()
            print('ESCAPED', what)
        except Exception as exc:
            print('BLOCKED', what, repr(exc))
    """
    result = target.run(code)
    assert_contained(result, r"PermissionError|Read-only file system|PolicyViolation|Operation not permitted")
    assert result.stdout.count("BLOCKED") == 6, message(result)
    assert hashlib.sha256(host_copy.read_bytes()).hexdigest() == before
    clear_workspace(target)


def test_symlinks_planted_for_download(target: Target) -> None:
    code = """
    import os
    for link, dest in (('leak.txt', '/etc/shadow'), ('etcdir', '/etc'), ('hostname.txt', '/etc/hostname')):
        try:
            os.symlink(dest, link)
        except Exception as exc:
            print('BLOCKED', repr(exc))
    """
    planted = target.run(code)
    assert planted.status == "ok", message(planted)
    if target.policy:
        assert re.search(LINKS_DENIED, planted.stdout), message(planted)
    for name in ("leak.txt", "etcdir/passwd", "hostname.txt", "./etcdir/hostname"):
        with pytest.raises(WorkspacePathError, match=r"symbolic link|does not exist"):
            target.sb.download(name)
    clear_workspace(target)


def test_hard_links_planted_for_download(target: Target) -> None:
    code = """
    import os
    open('own.txt', 'w').write('mine')
    for src, dst in (('own.txt', 'twin.txt'), ('/etc/passwd', 'passwd.txt')):
        try:
            os.link(src, dst)
            print('LINKED', dst)
        except Exception as exc:
            print('BLOCKED', dst, repr(exc))
    """
    planted = target.run(code)
    assert planted.status == "ok", message(planted)
    assert "LINKED passwd.txt" not in planted.stdout, "linking a host file into the workspace must fail"
    if "LINKED twin.txt" in planted.stdout:
        for name in ("own.txt", "twin.txt"):
            with pytest.raises(WorkspacePathError, match="hard links"):
                target.sb.download(name)
    else:
        assert target.policy and re.search(LINKS_DENIED, planted.stdout), message(planted)
        assert target.sb.download("own.txt") == b"mine"
    clear_workspace(target)


def test_symlink_at_upload_destination(target: Target, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    victim.chmod(0o666)
    code = f"""
    import os
    os.makedirs('sub', exist_ok=True)
    for link, dest in (('note.txt', {str(victim)!r}), ('sub/dir', {str(tmp_path)!r})):
        try:
            os.symlink(dest, link)
        except Exception as exc:
            print('BLOCKED', repr(exc))
    """
    planted = target.run(code)
    for dest in ("note.txt", "sub/dir/victim.txt"):
        if target.policy:  # the links were never made: the upload lands in the workspace
            assert re.search(LINKS_DENIED, planted.stdout), message(planted)
            target.sb.upload(b"from the host", dest)
            assert target.sb.download(dest) == b"from the host"
        else:
            with pytest.raises(WorkspacePathError, match=r"symbolic link|not a plain file"):
                target.sb.upload(b"from the host", dest)
    assert victim.read_text() == "host file"
    clear_workspace(target)


def test_symlink_at_upload_temporary_name(target: Target, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The kernel plants ``.<name>.upload`` (the temp name upload writes first) as a symlink.

    ``Sandbox.upload`` writes through directory descriptors to a fresh randomly named temporary
    file (``write_workspace_file``), so the planted link is never written through; under the
    policy the link cannot be planted at all.
    """
    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    victim.chmod(0o644)
    planted = target.run(attempt(f"import os\nos.symlink({str(victim)!r}, '.report.txt.upload')"))
    try:
        if target.policy:
            assert_contained(planted, LINKS_DENIED)
        with contextlib.suppress(WorkspacePathError):
            target.sb.upload(b"from the host", "report.txt")
        assert victim.read_text() == "host file", "upload wrote through a kernel-planted symlink"
        assert victim.stat().st_uid == os.getuid(), "upload chowned a host file to the kernel"
    finally:
        clear_workspace(target)


def test_safe_workspace_writer_defeats_planted_links(target: Target, tmp_path: Path) -> None:
    """The fix for the gap above, exercised against links a real kernel planted."""
    from pixelbox.runtime.workspace import write_workspace_file

    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    code = f"""
    import os
    os.makedirs('deep', exist_ok=True)
    for i in range(64):
        os.symlink({str(victim)!r}, '.doc.txt.' + format(i, '016x') + '.upload')
    os.symlink({str(tmp_path)!r}, 'deep/outside')
    os.symlink({str(victim)!r}, 'linked.txt')
    """
    planted = target.run(code)
    work = target.sb.layout.work
    owner = target.sb.info.kernel["uid"] if os.geteuid() == 0 else None
    if target.policy:
        assert re.search(LINKS_DENIED, message(planted)), message(planted)
    else:
        assert planted.status == "ok", message(planted)
        for name in ("deep/outside/victim.txt", "linked.txt"):
            with pytest.raises(WorkspacePathError):
                write_workspace_file(work, name, b"from the host", owner=owner)
    written = write_workspace_file(work, "doc.txt", b"from the host", owner=owner)
    assert not written.is_symlink() and written.read_bytes() == b"from the host"
    assert victim.read_text() == "host file" and victim.stat().st_uid == os.getuid()
    seen = target.run("print(open('doc.txt').read())")
    assert seen.stdout == "from the host\n", message(seen)
    clear_workspace(target)


def test_path_traversal_names_in_upload_and_download(target: Target) -> None:
    parent = target.sb.layout.work.parent
    before = sorted(p.name for p in parent.iterdir())
    inside = target.sb.paths.workspace
    bad = [
        "..",
        "../x.txt",
        "./../x.txt",
        "a/./../../x.txt",
        "/etc/passwd",
        f"{inside}/../x.txt",
        f"{inside}/sub/../../x.txt",
        "x\x00.txt",
        "",
    ]
    for name in bad:
        with pytest.raises(WorkspacePathError):
            target.sb.upload(b"x", name)
        with pytest.raises(WorkspacePathError):
            target.sb.download(name)
    assert sorted(p.name for p in parent.iterdir()) == before, "a traversal created a file next to the workspace"
    assert target.sb.upload(b"ok", f"{inside}/fine.txt") == f"{inside}/fine.txt"
    assert target.sb.download("fine.txt") == b"ok"


def test_download_of_a_fifo_does_not_hang_the_host(target: Target) -> None:
    made = target.run(attempt("import os\nos.mkfifo('pipe')"))
    with pytest.raises(WorkspacePathError, match=r"not a regular file|does not exist"):
        target.sb.download("pipe")
    if target.policy:
        assert_contained(made, r"PolicyViolation|denied-os-function")
    clear_workspace(target)


def test_kernel_cannot_gain_privileges(target: Target) -> None:
    """no_new_privs: setuid binaries (mount, su, passwd) cannot raise the kernel's privileges."""
    if target.docker:  # gVisor's /proc omits the field, so ask the kernel itself
        result = target.run("import ctypes\nprint('nnp', ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))")
        assert result.stdout == "nnp 1\n", message(result)
    else:  # the policy keeps /proc and ctypes from the cell, so read it from the host
        status = Path(f"/proc/{target.sb.info.kernel['pid']}/status").read_text()
        assert "NoNewPrivs:\t1" in status, status
