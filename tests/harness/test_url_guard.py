"""The SSRF guard on model-chosen URLs: download_image, fetch_webpage and lens by image_url never reach the
host's own network (loopback, private, link-local, ...) unless a test or local setup opts in.

The internet is not reachable here, so redirects are checked by serving them from a loopback server
whose first hop the guard is told to let through (``exempt``), and name resolution is replaced by
an injected resolver where a public-looking name is needed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from pathlib import Path

import pytest

from pixelbox.harness.runner import WebConfig
from pixelbox.harness.tasks import Task
from pixelbox.harness.web import (
    DownloadLimits,
    ImgbbHost,
    JinaReader,
    SerperProvider,
    UrlGuard,
    WebCache,
    WebTools,
    blocked_reason,
)
from pixelbox.harness.web.guard import Resolver
from tests.harness.servers import ImageServer, ImgbbServer, JinaServer, SerperServer, png_bytes


@pytest.fixture
def served(images: ImageServer) -> ImageServer:
    images.routes["/cat.png"] = ("image/png", png_bytes(40, 30))
    return images


def port_of(server: ImageServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def loopback_resolver(names: Sequence[str]) -> Resolver:
    """A resolver mapping ``names`` to 127.0.0.1 (and refusing others), standing in for DNS."""

    def resolve(host: str, port: int) -> list[str]:
        if host in names:
            return ["127.0.0.1"]
        raise OSError(f"unknown host {host}")

    return resolve


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("10.0.0.1", "a private-network address"),
        ("172.16.5.4", "a private-network address"),
        ("192.168.1.1", "a private-network address"),
        ("169.254.169.254", "a link-local address (this includes cloud metadata services)"),
        ("0.0.0.0", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("100.64.0.1", "not a public internet address"),
        ("[::1]", "a loopback address"),
        ("[fd00::1]", "a private-network address"),
        ("[fe80::1]", "a link-local address"),
        ("[::ffff:127.0.0.1]", "a loopback address (embedded in ::ffff:7f00:1)"),
        ("[::ffff:169.254.169.254]", "a link-local address"),
    ],
)
def test_download_image_refuses_non_public_addresses(served: ImageServer, host: str, reason: str) -> None:
    url = f"http://{host}:{port_of(served)}/cat.png"
    result = WebTools().download_image(url)
    assert not result.ok and result.blob is None
    assert f"download_image refused {url}" in result.error and reason in result.error
    assert "only public internet addresses" in result.text and result.text.startswith("Error: ")
    assert served.requests == []


def test_a_name_resolving_to_loopback_is_refused(served: ImageServer) -> None:
    url = f"http://localhost:{port_of(served)}/cat.png"
    result = WebTools().download_image(url)
    assert not result.ok and "localhost resolves to 127.0.0.1, which is a loopback address" in result.error
    assert served.requests == []


def test_the_same_urls_are_fetched_with_the_explicit_opt_in(served: ImageServer) -> None:
    for url in (served.url + "/cat.png", f"http://localhost:{port_of(served)}/cat.png"):
        result = WebTools(allow_private_urls=True).download_image(url)
        assert result.ok and result.blob == served.routes["/cat.png"][1]
    assert len(served.requests) == 2


def test_a_redirect_to_loopback_is_refused_after_an_allowed_first_hop(served: ImageServer) -> None:
    first = f"http://images.test:{port_of(served)}/redirect/cat.png"
    guard = UrlGuard(resolve=loopback_resolver(["images.test"]), exempt=lambda url: url == first)
    result = WebTools(guard=guard).download_image(first)
    target = f"http://images.test:{port_of(served)}/cat.png"
    assert not result.ok
    assert f"download_image refused {target}: images.test resolves to 127.0.0.1" in result.error
    assert [r.path for r in served.requests] == ["/redirect/cat.png"]  # the target was never requested
    # the first hop went to the address the guard resolved, with the URL's own host name
    assert served.requests[0].headers["host"] == f"images.test:{port_of(served)}"


def test_a_redirect_to_the_metadata_address_is_refused(served: ImageServer) -> None:
    first = served.url + "/goto?to=http://169.254.169.254/latest/meta-data/"
    result = WebTools(guard=UrlGuard(exempt=lambda url: url == first)).download_image(first)
    assert not result.ok and "refused http://169.254.169.254/latest/meta-data/" in result.error
    assert "link-local" in result.error and len(served.requests) == 1


def test_allowed_redirects_are_followed_by_hand_and_bounded(served: ImageServer) -> None:
    every = UrlGuard(resolve=loopback_resolver(["images.test"]), exempt=lambda url: True)
    tools = WebTools(guard=every, limits=DownloadLimits(max_count=5))
    ok = tools.download_image(f"http://images.test:{port_of(served)}/redirect/cat.png")
    assert ok.ok and ok.data["final_url"] == f"http://images.test:{port_of(served)}/cat.png"
    served.requests.clear()
    looping = tools.download_image(served.url + "/loop/0")
    assert not looping.ok and "more than 5 redirects" in looping.error
    assert [r.path for r in served.requests] == [f"/loop/{k}" for k in range(6)]


def test_unresolvable_names_are_refused_for_downloads() -> None:
    result = WebTools().download_image("http://no-such-host.invalid/cat.png")
    assert not result.ok and "cannot resolve the host 'no-such-host.invalid'" in result.error


def test_fetch_webpage_and_lens_urls_are_guarded_but_provider_endpoints_are_not(
    serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer
) -> None:
    tools = WebTools(
        search=SerperProvider("serper-test", base_url=serper.url),
        reader=JinaReader(base_url=jina.url),
        host=ImgbbHost("imgbb-test", base_url=imgbb.url),
    )
    for url, reason in (
        ("http://127.0.0.1:8080/admin", "a loopback address"),
        ("http://localhost/", "localhost resolves to 127.0.0.1"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ):
        page = tools.fetch_webpage(url)
        assert not page.ok and f"fetch_webpage refused {url}" in page.error and reason in page.error
    lens = tools.call("google_lens_search", {"image_url": "http://10.0.0.1/x.png"})
    assert not lens.ok and "google_lens_search refused http://10.0.0.1/x.png" in lens.error
    assert jina.requests == [] and serper.requests == []
    # the configured providers live on 127.0.0.1 and are still used for public URLs and uploads
    assert tools.fetch_webpage("https://example.org/short").ok
    assert tools.call("google_lens_search", {"image_url": "https://example.org/x.png"}).ok
    assert tools.google_lens_search(png_bytes(), "us", "en").ok and imgbb.uploads
    assert len(jina.requests) == 1 and len(serper.requests) == 2


def test_refusals_are_recorded_and_replayed_like_other_failures(tmp_path: Path, served: ImageServer) -> None:
    url = served.url + "/cat.png"
    recorded = WebTools(cache=WebCache.for_task(tmp_path, "t", "record")).download_image(url)
    replayed = WebTools(cache=WebCache.for_task(tmp_path, "t", "replay")).download_image(url)
    assert not recorded.ok and not replayed.ok and replayed.source == "cache"
    assert replayed.error == recorded.error and "loopback" in replayed.error
    assert served.requests == []


def test_web_config_opt_in_defaults_off_and_is_part_of_the_run_configuration(tmp_path: Path) -> None:
    task = Task(task_id="t", prompt="p", images=(), answer={"value": "x"})
    assert not WebConfig().tools_for(task).guard.allow_private
    assert WebConfig(allow_private_urls=True).tools_for(task).guard.allow_private
    assert "allow_private_urls" not in WebConfig(cache_root=tmp_path).to_dict()
    assert WebConfig(cache_root=tmp_path, allow_private_urls=True).to_dict()["allow_private_urls"] is True


def test_public_addresses_pass_the_address_check() -> None:
    for text in ("93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"):
        assert blocked_reason(ipaddress.ip_address(text)) is None
    guard = UrlGuard(resolve=lambda host, port: ["93.184.216.34"])
    vetted = guard.vet("https://images.example.com/a.png", tool="download_image", connect=True)
    assert (vetted.host, vetted.port, vetted.address) == ("images.example.com", 443, "93.184.216.34")
