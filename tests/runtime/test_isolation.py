"""What model code can reach from inside a sandbox: no network, no host secrets, no root."""

from __future__ import annotations

import os
from typing import Any

import pytest

from pixelbox.runtime import Sandbox

PROBE_NETWORK = """
import socket, urllib.request
outcomes = {}
def attempt(name, fn):
    try:
        fn()
        outcomes[name] = "REACHED"
    except Exception as exc:
        outcomes[name] = type(exc).__name__
def tcp():
    s = socket.create_connection(("1.1.1.1", 53), timeout=2)
    s.close()
def dns():
    socket.getaddrinfo("pypi.org", 443)
def http():
    urllib.request.urlopen("http://example.com", timeout=2)
def loopback_host():
    s = socket.create_connection(("127.0.0.1", 2375), timeout=2)
    s.close()
for name, fn in [("tcp", tcp), ("dns", dns), ("http", http), ("loopback", loopback_host)]:
    attempt(name, fn)
print(outcomes)
"""


def test_network_is_unreachable(backend: dict[str, Any]) -> None:
    with Sandbox(policy=False, **backend) as sb:
        if backend["backend"] == "local" and not sb.info.isolation["network_isolated"]:
            pytest.skip("this host cannot give local kernels a private network namespace (info says so)")
        result = sb.execute(PROBE_NETWORK, timeout=30)
        assert result.status == "ok", result.error
        outcomes = eval(result.stdout)  # the dict printed above
        assert set(outcomes) == {"tcp", "dns", "http", "loopback"}
        assert "REACHED" not in outcomes.values(), outcomes


def test_host_environment_is_invisible(backend: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-should-not-leak")
    with Sandbox(policy=False, env={"ALLOWED_VAR": "visible"}, **backend) as sb:
        result = sb.execute("import os\nprint(os.environ.get('OPENAI_API_KEY'), os.environ.get('ALLOWED_VAR'))")
        assert result.stdout == "None visible\n"
        leaked = sb.execute("import os\nprint(open('/proc/self/environ','rb').read().count(b'sk-host-secret'))")
        assert leaked.stdout == "0\n"


def test_kernel_runs_unprivileged(backend: dict[str, Any]) -> None:
    with Sandbox(policy=False, **backend) as sb:
        uid = int(sb.execute("import os\nprint(os.getuid())").stdout)
        if os.geteuid() == 0 or backend["backend"] == "docker":
            assert uid != 0
        assert sb.info.kernel["uid"] == uid


def test_docker_root_filesystem_is_read_only(docker_backend: dict[str, Any]) -> None:
    with Sandbox(**docker_backend) as sb:
        info = sb.info.isolation
        assert info["read_only_root"] is True
        assert info["network_isolated"] is True
        assert info["cap_drop"] == ["ALL"]
        result = sb.execute(
            "import os\nres = []\nfor p in ['/etc/x', '/usr/x', '/opt/venv/x']:\n"
            "    try:\n        open(p, 'w').write('x'); res.append('WROTE')\n"
            "    except OSError as e:\n        res.append(e.errno)\nprint(res)"
        )
        assert "WROTE" not in result.stdout, result.stdout
        scratch = sb.execute("open('/tmp/t.txt','w').write('ok'); print(open('/tmp/t.txt').read())")
        assert scratch.stdout == "ok\n"


def test_workspace_files_round_trip_and_paths_are_checked(backend: dict[str, Any]) -> None:
    from pixelbox.runtime import WorkspacePathError

    with Sandbox(policy=False, **backend) as sb:
        inside = sb.upload(b"hello", "sub/dir/a.txt")
        assert sb.execute(f"print(open({inside!r}).read())").stdout == "hello\n"
        sb.execute("open('made.txt', 'w').write('from kernel')")
        assert sb.download("made.txt") == b"from kernel"
        for bad in ("../escape.txt", "/etc/passwd", "", "a/../../b"):
            with pytest.raises(WorkspacePathError):
                sb.download(bad)
            with pytest.raises(WorkspacePathError):
                sb.upload(b"x", bad)
        sb.execute("import os\nos.symlink('/etc/hostname', 'link.txt')")
        with pytest.raises(WorkspacePathError, match="symbolic link"):
            sb.download("link.txt")


def test_kernel_offers_no_debugger(backend: dict[str, Any]) -> None:
    """debugpy stays unloaded: no debug requests reach the kernel, and it is not paid for at start."""
    probe = (
        "import sys\nfrom ipykernel.debugger import _is_debugpy_available\n"
        "print(_is_debugpy_available, sorted(m for m in sys.modules if 'pydev' in m or m.startswith('debugpy.')))"
    )
    with Sandbox(policy=False, **backend) as sb:
        result = sb.execute(probe)
        assert result.status == "ok", result.error
        assert result.stdout == "False []\n"
