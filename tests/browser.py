"""Headless Chromium for the report tests: the DOM after the page loaded (scripts run, images decoded),
screenshots kept for review, and what the screenshots show.

Chromium is Debian's ``/usr/bin/chromium`` (installed by scripts/setup.sh); CI requires it, a developer
machine without it skips. Each call gets the test's own profile directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

ARTIFACTS = Path(os.environ.get("PIXELBOX_TEST_ARTIFACTS", "/tmp/pixelbox-test-artifacts"))
"""Where tests leave screenshots for a reviewer to look at (outside the repository and pytest's tmp_path)."""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is required in CI (Debian package 'chromium')")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def browse(page: Path, profile: Path, *extra: str) -> str:
    """Run Chromium on ``page``; its stdout."""
    done = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return done.stdout


def rendered(page: Path, profile: Path) -> Dom:
    """The page's DOM as Chromium has it once loaded (``onload`` handlers ran, images decoded)."""
    return Dom.parse(browse(page, profile, "--virtual-time-budget=5000", "--dump-dom"))


def screenshot(page: Path, name: str, profile: Path, size: tuple[int, int] = (1280, 2400)) -> Image.Image:
    """A screenshot of ``page`` saved as ``ARTIFACTS/name`` (kept for review: pytest deletes tmp_path)."""
    own = profile.parent / f"{profile.name}-{name}"  # read back from a file of this test's own
    own.unlink(missing_ok=True)
    browse(page, profile, f"--window-size={size[0]},{size[1]}", "--virtual-time-budget=5000", f"--screenshot={own}")
    with Image.open(own) as image:
        shown = image.convert("RGB")
    shot = ARTIFACTS / name  # shared by test sessions running side by side: replaced whole, never read
    shot.parent.mkdir(parents=True, exist_ok=True)
    staged = shot.with_name(f".{name}.{os.getpid()}")
    shutil.copyfile(own, staged)
    os.replace(staged, shot)
    print(f"screenshot saved at {shot}")
    return shown


def pixels_of(image: Image.Image, hex_colour: str, tolerance: int = 6) -> int:
    """How many pixels of ``image`` have ``hex_colour`` (each channel within ``tolerance``)."""
    target = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return sum(
        count
        for count, pixel in image.getcolors(image.width * image.height) or []
        if all(abs(a - b) <= tolerance for a, b in zip(pixel, target, strict=True))
    )


@dataclass
class Node:
    """An element: tag, attributes, children and the text directly inside it."""

    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def all_text(self) -> str:
        return self.text + "".join(child.all_text() for child in self.children)

    def walk(self) -> list[Node]:
        return [self, *(node for child in self.children for node in child.walk())]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Descendants (and self) with ``tag``, class ``cls`` and every attribute in ``attrs`` (``_`` for ``-``)."""
        wanted = {k.replace("_", "-"): v for k, v in attrs.items()}
        return [
            node
            for node in self.walk()
            if (tag is None or node.tag == tag)
            and (cls is None or cls in node.classes)
            and all(node.attrs.get(k) == v for k, v in wanted.items())
        ]

    def by_id(self, ident: str) -> Node:
        [node] = self.find(id=ident)
        return node


class Dom(Node):
    """The root of a parsed page."""

    @classmethod
    def parse(cls, html: str) -> Dom:
        builder = _Builder()
        builder.feed(html)
        return builder.root


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Dom("document", {})
        self.stack: list[Node] = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].text += data
