"""Egress: no byte leaves a sandbox, by TCP, UDP, DNS, HTTP, raw sockets or a subprocess.

The host runs real listeners on its own loopback (TCP, UDP, HTTP, IPv6 and an abstract Unix
socket) and counts what reaches them; every case asserts the counters stay at zero *and* the
agent sees why its attempt failed. Only loopback, link-local and names that need DNS are
targeted, never a real external host. ``local-os`` (local backend, policy off) shows that the
network namespace holds on its own, without the policy.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.hardening.support import Target, assert_contained, attempt

HARDENING_BACKENDS = ("local", "local-os", "runc", "runsc")
NET_REFUSED = (
    r"policy rule: no-network|PolicyViolation|ConnectionRefused|Network is unreachable|"
    r"timed out|TimeoutError|Cannot assign requested address|No route to host"
)


@dataclass
class Listeners:
    """Host-side listeners on loopback and what reached them."""

    tcp_port: int = 0
    udp_port: int = 0
    http_port: int = 0
    tcp6_port: int | None = None
    abstract: str = ""
    hits: list[str] = field(default_factory=list)

    def reset(self) -> None:
        """Forget hits between cases."""
        self.hits.clear()


def _accept_forever(server: socket.socket, label: str, hits: list[str]) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        hits.append(label)
        conn.close()


def _recv_forever(server: socket.socket, hits: list[str]) -> None:
    while True:
        try:
            _, peer = server.recvfrom(2048)
        except OSError:
            return
        hits.append("udp")
        with contextlib.suppress(OSError):
            server.sendto(b"pong", peer)


@pytest.fixture(scope="module")
def listeners() -> Iterator[Listeners]:
    """TCP, UDP, HTTP, IPv6 and abstract-Unix listeners on the host, counting every contact."""
    found = Listeners()
    sockets: list[socket.socket] = []

    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    found.tcp_port = tcp.getsockname()[1]
    sockets.append(tcp)
    threading.Thread(target=_accept_forever, args=(tcp, "tcp", found.hits), daemon=True).start()

    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    found.udp_port = udp.getsockname()[1]
    sockets.append(udp)
    threading.Thread(target=_recv_forever, args=(udp, found.hits), daemon=True).start()

    with contextlib.suppress(OSError):
        tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        tcp6.bind(("::1", 0))
        tcp6.listen(8)
        found.tcp6_port = tcp6.getsockname()[1]
        sockets.append(tcp6)
        threading.Thread(target=_accept_forever, args=(tcp6, "tcp6", found.hits), daemon=True).start()

    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    found.abstract = f"pbx-hardening-{threading.get_ident()}"
    abstract.bind("\0" + found.abstract)
    abstract.listen(8)
    sockets.append(abstract)
    threading.Thread(target=_accept_forever, args=(abstract, "abstract", found.hits), daemon=True).start()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found.hits.append("http")
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"host secret page")

        def log_message(self, *args: object) -> None:
            return

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.http_port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield found
    finally:
        httpd.shutdown()
        httpd.server_close()
        for sock in sockets:
            sock.close()


@pytest.fixture
def host(listeners: Listeners) -> Iterator[Listeners]:
    """The listeners, which must not have been contacted by the end of the case."""
    listeners.reset()
    yield listeners
    assert listeners.hits == [], f"the sandbox reached host listeners: {listeners.hits}"


def test_tcp_connect_to_host_loopback(target: Target, host: Listeners) -> None:
    result = target.run(attempt(f"import socket\nsocket.create_connection(('127.0.0.1', {host.tcp_port}), timeout=2)"))
    assert_contained(result, NET_REFUSED)


def test_udp_datagram_to_host_loopback_gets_no_answer(target: Target, host: Listeners) -> None:
    code = f"""
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.5)
    s.sendto(b'ping', ('127.0.0.1', {host.udp_port}))
    s.recvfrom(16)
    """
    assert_contained(target.run(attempt(code)), NET_REFUSED + r"|ConnectionRefused")


def test_dns_lookups_fail(target: Target, host: Listeners) -> None:
    code = """
    import socket
    socket.getaddrinfo('example.com', 443)
    """
    assert_contained(
        target.run(attempt(code)), r"policy rule: no-network|PolicyViolation|gaierror|name resolution|not known"
    )
    by_name = target.run(attempt("import socket\nsocket.gethostbyname('pypi.org')"))
    assert_contained(by_name, r"policy rule: no-network|PolicyViolation|gaierror|name resolution|not known")


def test_http_to_host_server_and_by_name(target: Target, host: Listeners) -> None:
    local = target.run(
        attempt(f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{host.http_port}/', timeout=2)")
    )
    assert_contained(local, NET_REFUSED + r"|URLError|denied-module|not available")
    named = target.run(attempt("import urllib.request\nurllib.request.urlopen('http://example.com/', timeout=2)"))
    assert_contained(named, r"URLError|gaierror|name resolution|denied-module|not available|no-network")


def test_cloud_metadata_address_is_unreachable(target: Target, host: Listeners) -> None:
    """169.254.169.254 is link-local by design: the classic SSRF target for cloud credentials."""
    result = target.run(attempt("import socket\nsocket.create_connection(('169.254.169.254', 80), timeout=2)"))
    assert_contained(result, NET_REFUSED)


def test_raw_and_packet_sockets_are_refused(target: Target, host: Listeners) -> None:
    raw = target.run(attempt("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"))
    assert_contained(raw, r"policy rule: no-network|PolicyViolation|PermissionError|Operation not permitted")
    packet = target.run(attempt("import socket\nsocket.socket(socket.AF_PACKET, socket.SOCK_RAW)"))
    assert_contained(packet, r"policy rule: no-network|PolicyViolation|PermissionError|Operation not permitted")


def test_ipv6_loopback_to_host(target: Target, host: Listeners) -> None:
    if host.tcp6_port is None:
        pytest.fail("the host has no IPv6 loopback; this case needs one to be meaningful")
    code = f"import socket\nsocket.create_connection(('::1', {host.tcp6_port}), timeout=2)"
    assert_contained(target.run(attempt(code)), NET_REFUSED + r"|Address family|EADDRNOTAVAIL|unreachable")


def test_abstract_unix_socket_of_the_host(target: Target, host: Listeners) -> None:
    """Abstract Unix sockets belong to a network namespace (cf. the containerd-shim escape)."""
    code = f"""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(chr(0) + {host.abstract!r})
    """
    assert_contained(target.run(attempt(code)), r"policy rule: no-network|PolicyViolation|ConnectionRefused")


def test_egress_through_a_subprocess(target: Target, host: Listeners) -> None:
    child = f"import socket; socket.create_connection(('127.0.0.1', {host.tcp_port}), timeout=2); print('ESCAPED')"
    code = f"""
    import subprocess, sys
    done = subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, text=True, timeout=10)
    print('child exit', done.returncode, done.stdout, done.stderr[-300:])
    """
    result = target.run(code)
    assert_contained(result, r"denied-module|PolicyViolation|ConnectionRefused|Network is unreachable")
