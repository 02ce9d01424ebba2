"""Small blocking HTTP helpers that turn every failure into a :class:`ProviderError`.

``request`` (stdlib ``urllib``) talks to the configured providers; ``guarded_get`` fetches
model-chosen URLs through a :class:`~pixelbox.harness.web.guard.UrlGuard`.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from pixelbox.harness.web.base import ProviderError
from pixelbox.harness.web.guard import UrlGuard, Vetted

USER_AGENT = "pixelbox-harness/0.1 (agent web tools)"


@dataclass(frozen=True)
class Reply:
    """A successful HTTP response read in full (up to the caller's cap)."""

    status: int
    headers: dict[str, str]
    body: bytes
    url: str

    def json(self, service: str) -> Any:
        """The body parsed as JSON; :class:`ProviderError` if it is not."""
        try:
            return json.loads(self.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            snippet = self.body[:120].decode("utf-8", "replace")
            raise ProviderError(f"{service} returned a response that is not JSON: {snippet!r}") from exc


def request(
    method: str,
    url: str,
    *,
    service: str,
    timeout: float,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    max_bytes: int | None = None,
) -> Reply:
    """Send one request; raise :class:`ProviderError` naming ``service`` on any failure.

    With ``max_bytes`` a larger body (declared or actual) is refused without reading it all.
    """
    req = urllib.request.Request(url, data=body, method=method, headers={"User-Agent": USER_AGENT, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            reply_headers = {k.lower(): v for k, v in response.headers.items()}
            _check_declared_size(reply_headers, max_bytes, service)
            data = response.read() if max_bytes is None else response.read(max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:
                raise ProviderError(f"{service}: response is larger than the {max_bytes}-byte limit")
            return Reply(response.status, reply_headers, data, response.geturl())
    except urllib.error.HTTPError as exc:
        raise ProviderError(_http_error_message(exc, service)) from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise ProviderError(f"{service} did not answer within {timeout:g} s") from exc
        raise ProviderError(f"cannot reach {service} at {_origin(url)}: {exc.reason}") from exc
    except TimeoutError as exc:
        raise ProviderError(f"{service} did not answer within {timeout:g} s") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise ProviderError(f"connection to {service} failed: {exc}") from exc


def check_reachable(url: str, *, service: str, timeout: float) -> None:
    """Raise :class:`ProviderError` unless something answers HTTP at ``url`` (any status counts: the
    host is up; keys and quotas are the provider's own calls' business)."""
    try:
        request("GET", url, service=service, timeout=timeout, max_bytes=64 * 1024)
    except ProviderError as exc:
        if isinstance(exc.__cause__, urllib.error.HTTPError):
            return
        raise


REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5


def guarded_get(
    url: str,
    guard: UrlGuard,
    *,
    tool: str,
    service: str,
    timeout: float,
    max_bytes: int | None = None,
    max_redirects: int = MAX_REDIRECTS,
) -> Reply:
    """GET a model-chosen URL: every hop is checked by ``guard`` and fetched from the address it checked.

    Redirects are followed here (at most ``max_redirects``), never automatically, so a public URL
    cannot bounce the host to a private one. Failures raise :class:`ProviderError` naming ``service``.
    Proxy settings from the environment are not used: the connection goes to the checked address.
    """
    current = url
    for hop in range(max_redirects + 1):
        vetted = guard.vet(current, tool=tool, connect=True)
        status, headers, response, connection = _open(vetted, service, timeout)
        try:
            if status in REDIRECT_STATUSES and headers.get("location"):
                if hop == max_redirects:
                    raise ProviderError(f"{service}: more than {max_redirects} redirects, starting at {url}")
                current = urllib.parse.urljoin(current, headers["location"].strip())
                continue
            if status >= 400:
                snippet = _read_safely(response, 300).decode("utf-8", "replace").strip()
                raise ProviderError(_status_message(status, snippet, service))
            _check_declared_size(headers, max_bytes, service)
            data = response.read() if max_bytes is None else response.read(max_bytes + 1)
            if max_bytes is not None and len(data) > max_bytes:
                raise ProviderError(f"{service}: response is larger than the {max_bytes}-byte limit")
            return Reply(status, headers, data, current)
        except TimeoutError as exc:
            raise ProviderError(f"{service} did not answer within {timeout:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise ProviderError(f"connection to {service} failed: {exc}") from exc
        finally:
            connection.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _open(
    vetted: Vetted, service: str, timeout: float
) -> tuple[int, dict[str, str], http.client.HTTPResponse, http.client.HTTPConnection]:
    """Send the GET of one hop; connects to ``vetted.address`` when the guard checked one."""
    parts = urllib.parse.urlsplit(vetted.url)
    factory = http.client.HTTPSConnection if vetted.scheme == "https" else http.client.HTTPConnection
    connection = factory(vetted.host, vetted.port, timeout=timeout)
    if vetted.address is not None:
        pinned = vetted.address

        def connect_pinned(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
            return socket.create_connection((pinned, address[1]), *args, **kwargs)

        connection._create_connection = connect_pinned  # type: ignore[attr-defined]
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    try:
        connection.request("GET", target, headers={"User-Agent": USER_AGENT, "Accept": "image/*,*/*;q=0.8"})
        response = connection.getresponse()
    except TimeoutError as exc:
        connection.close()
        raise ProviderError(f"{service} did not answer within {timeout:g} s") from exc
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        raise ProviderError(f"cannot reach {service} at {_origin(vetted.url)}: {exc}") from exc
    headers = {k.lower(): v for k, v in response.getheaders()}
    return response.status, headers, response, connection


def _read_safely(response: http.client.HTTPResponse, limit: int) -> bytes:
    try:
        return response.read(limit)
    except (OSError, http.client.HTTPException):
        return b""


def post_json(url: str, payload: Any, *, service: str, timeout: float, headers: dict[str, str]) -> Any:
    """POST a JSON body and parse the JSON reply."""
    body = json.dumps(payload).encode()
    headers = {**headers, "Content-Type": "application/json"}
    return request("POST", url, service=service, timeout=timeout, body=body, headers=headers).json(service)


def post_form(url: str, fields: dict[str, str], *, service: str, timeout: float) -> Any:
    """POST ``application/x-www-form-urlencoded`` fields and parse the JSON reply."""
    body = urllib.parse.urlencode(fields).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return request("POST", url, service=service, timeout=timeout, body=body, headers=headers).json(service)


def _check_declared_size(headers: dict[str, str], max_bytes: int | None, service: str) -> None:
    declared = headers.get("content-length", "")
    if max_bytes is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ProviderError(f"{service}: response of {declared} bytes is larger than the {max_bytes}-byte limit")


def _http_error_message(exc: urllib.error.HTTPError, service: str) -> str:
    try:
        snippet = exc.read(300).decode("utf-8", "replace").strip()
    except OSError:
        snippet = ""
    return _status_message(exc.code, snippet, service)


def _status_message(status: int, snippet: str, service: str) -> str:
    hint = {401: " (check the API key)", 403: " (check the API key and its quota)", 429: " (rate limited)"}
    detail = f": {snippet}" if snippet else ""
    return f"{service} returned HTTP {status}{hint.get(status, '')}{detail}"


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def is_web_url(url: Any) -> bool:
    """Whether ``url`` is an absolute http(s) URL with a host."""
    if not isinstance(url, str):
        return False
    parts = urllib.parse.urlsplit(url.strip())
    return parts.scheme in ("http", "https") and bool(parts.netloc)
