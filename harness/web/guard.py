"""Keeping model-chosen URLs off the host's own network (server-side request forgery).

The web tools run on the host, which can reach things the sandbox cannot: loopback services, the
private network, cloud metadata endpoints (169.254.169.254). The URLs the *model* picks
(``download_image``, ``fetch_webpage``, ``google_lens_search`` by ``image_url``) therefore go
through a :class:`UrlGuard`: the host name is resolved and every address must be a public
internet address. ``download_image`` then connects to exactly the address that was checked (no
second lookup a DNS rebinding could change) and follows redirects itself, checking every hop.
The providers' own endpoints (Serper, Jina, imgbb base URLs) are configuration and not guarded.

``UrlGuard(allow_private=True)`` turns the check off (tests and local setups serving images from
127.0.0.1). ``resolve`` and ``exempt`` exist so tests can exercise the checks without the internet.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pixelbox.harness.web.base import ProviderError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]
"""``(host, port) -> addresses`` as strings (the default uses ``socket.getaddrinfo``)."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, not global, not "private" either


class BlockedURL(ProviderError):
    """A model-chosen URL leads to an address the host must not fetch for the model."""


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (TCP), in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address (None when it is one)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return f"{inner} (embedded in {address})" if inner else None
    checks = (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address (this includes cloud metadata services)"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private-network address"),
    )
    for attribute, reason in checks:
        if getattr(address, attribute):
            return reason
    if address in _SHARED or not address.is_global:
        return "not a public internet address"
    return None


@dataclass(frozen=True)
class Vetted:
    """A URL that passed the guard: its parts and the address to connect to (None when unchecked)."""

    url: str
    scheme: str
    host: str
    port: int
    address: str | None


class UrlGuard:
    """Refuses URLs whose host is, or resolves to, a non-public address.

    ``allow_private`` turns the guard off. ``resolve`` replaces DNS (tests); ``exempt(url)`` true
    skips the address check for that URL (it is still resolved, and fetched from the address
    resolved): tests use it to let a first hop on a loopback server through and see its redirect
    checked. Names that do not resolve are refused when the host itself must connect, and passed
    on to the provider (which fetches from its own network) otherwise.
    """

    def __init__(
        self,
        *,
        allow_private: bool = False,
        resolve: Resolver = resolve_host,
        exempt: Callable[[str], bool] | None = None,
    ) -> None:
        self.allow_private = allow_private
        self._resolve = resolve
        self._exempt = exempt

    def vet(self, url: str, *, tool: str, connect: bool) -> Vetted:
        """Check ``url``; :class:`BlockedURL` (or :class:`ProviderError` for a malformed URL) when refused.

        With ``connect`` the host will connect itself, so the result names the checked address.
        """
        parts = urllib.parse.urlsplit(url)
        try:
            host, port = parts.hostname, parts.port
        except ValueError as exc:
            raise ProviderError(f"{tool}: {url!r} is not a valid URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not host:
            raise ProviderError(f"{tool} needs an http(s) URL with a host, got {url!r}")
        port = port or (443 if parts.scheme == "https" else 80)
        if self.allow_private:
            return Vetted(url, parts.scheme, host, port, None)
        try:
            literal: IPAddress | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [str(literal)]
        else:
            try:
                addresses = list(self._resolve(host, port))
            except (OSError, UnicodeError) as exc:
                if not connect:
                    return Vetted(url, parts.scheme, host, port, None)
                raise ProviderError(f"{tool}: cannot resolve the host {host!r} of {url} ({exc})") from None
            if not addresses:
                raise ProviderError(f"{tool}: the host {host!r} of {url} has no address")
        if self._exempt is not None and self._exempt(url):
            return Vetted(url, parts.scheme, host, port, addresses[0])
        for text in addresses:
            address = ipaddress.ip_address(text.split("%", 1)[0])
            reason = blocked_reason(address)
            if reason is not None:
                subject = host if literal is not None else f"{host} resolves to {address}, which"
                raise BlockedURL(
                    f"{tool} refused {url}: {subject} is {reason}; only public internet addresses can be "
                    "fetched for the model"
                )
        return Vetted(url, parts.scheme, host, port, addresses[0])
