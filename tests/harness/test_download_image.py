"""download_image: real HTTP fetches, image checks, caps on count, bytes and pixels, and offline replay.

The images are served from 127.0.0.1, so these tools opt in with ``allow_private_urls=True``; the
guard that refuses such addresses by default is tested in test_url_guard.py.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from pixelbox.harness.web import DownloadLimits, WebCache, WebTools
from tests.harness.servers import ImageServer, png_bytes


@pytest.fixture
def served(images: ImageServer) -> ImageServer:
    images.routes.update(
        {
            "/cat.png": ("image/png", png_bytes(40, 30)),
            "/dog.jpg": ("image/jpeg", png_bytes(20, 10, fmt="JPEG")),
            "/page.html": ("text/html", b"<html><body>not an image</body></html>"),
            "/mislabelled.png": ("image/png", b"GIF89a but not really"),
            "/big.png": ("image/png", png_bytes(1000, 1000)),
        }
    )
    return images


def test_downloads_png_and_jpeg_with_metadata(served: ImageServer) -> None:
    tools = WebTools(allow_private_urls=True)
    png = tools.download_image(served.url + "/cat.png")
    jpg = tools.download_image(served.url + "/dog.jpg")
    assert png.ok and png.blob == served.routes["/cat.png"][1]
    assert (png.data["format"], png.data["width"], png.data["height"], png.data["mime"]) == ("PNG", 40, 30, "image/png")
    assert jpg.ok and Image.open(io.BytesIO(jpg.blob)).size == (20, 10) and jpg.data["mime"] == "image/jpeg"
    assert "Downloaded image (PNG, 40x30" in png.text
    assert "base64" not in png.data and "blob" not in png.to_dict()


@pytest.mark.parametrize(
    ("path", "limits", "message"),
    [
        ("/page.html", DownloadLimits(), "is not an image that can be read (served as text/html)"),
        ("/mislabelled.png", DownloadLimits(), "is not an image that can be read (served as image/png)"),
        ("/big.png", DownloadLimits(max_bytes=500), "larger than the 500-byte limit"),
        ("/big.png", DownloadLimits(max_pixels=10_000), "1000x1000 is more than the 10000-pixel limit"),
        ("/missing.png", DownloadLimits(), "HTTP 404"),
        ("/slow", DownloadLimits(timeout=0.3), "did not answer within 0.3 s"),
    ],
)
def test_bad_downloads_are_tool_errors(served: ImageServer, path: str, limits: DownloadLimits, message: str) -> None:
    result = WebTools(allow_private_urls=True, limits=limits).download_image(served.url + path)
    assert not result.ok and message in result.error and result.blob is None


def test_only_web_urls_are_fetched(served: ImageServer) -> None:
    tools = WebTools(allow_private_urls=True)
    for url in ("file:///etc/passwd", "/etc/passwd", "data:image/png;base64,AAAA", 7):
        assert "must be an http(s) URL" in tools.download_image(url).error
    assert served.requests == []


def test_redirects_are_followed_and_reported(served: ImageServer) -> None:
    result = WebTools(allow_private_urls=True).download_image(served.url + "/redirect/cat.png")
    assert result.ok and result.data["final_url"] == served.url + "/cat.png"


def test_count_cap_counts_successes_only(served: ImageServer) -> None:
    tools = WebTools(allow_private_urls=True, limits=DownloadLimits(max_count=2))
    assert not tools.download_image(served.url + "/page.html").ok
    assert tools.download_image(served.url + "/cat.png").ok and tools.download_image(served.url + "/dog.jpg").ok
    refused = tools.download_image(served.url + "/cat.png")
    assert not refused.ok and "at most 2 images can be downloaded per task" in refused.error
    assert len(served.requests) == 3


def test_recorded_downloads_replay_offline(tmp_path: Path, served: ImageServer) -> None:
    url = served.url + "/cat.png"
    recorded = WebTools(allow_private_urls=True, cache=WebCache.for_task(tmp_path, "t", "record")).download_image(url)
    served.routes.clear()
    replayed = WebTools(allow_private_urls=True, cache=WebCache.for_task(tmp_path, "t", "replay")).download_image(url)
    assert replayed.ok and replayed.source == "cache"
    assert replayed.blob == recorded.blob and replayed.data == recorded.data
    assert len(served.requests) == 1
