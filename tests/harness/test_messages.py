"""Message helpers: images become data URLs with the right type, summaries describe what was sent."""

from __future__ import annotations

import base64
from pathlib import Path

from pixelbox.harness.agents import image_part, summarize_messages, text_part
from tests.harness.servers import png_bytes


def test_image_part_types_images_by_content_then_name(tmp_path: Path) -> None:
    jpeg = png_bytes(fmt="JPEG")
    (tmp_path / "photo.png").write_bytes(jpeg)
    from_path = image_part(tmp_path / "photo.png", detail="high")
    url = from_path["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,") and from_path["image_url"]["detail"] == "high"
    assert base64.b64decode(url.split(",", 1)[1]) == jpeg
    (tmp_path / "x.webp").write_bytes(b"unknown bytes")
    assert image_part(tmp_path / "x.webp")["image_url"]["url"].startswith("data:image/webp;")
    assert image_part(b"unknown bytes")["image_url"]["url"].startswith("data:image/png;")


def test_summary_counts_images_and_changes_with_content() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [text_part("Compare"), image_part(png_bytes()), image_part(png_bytes(8, 8))]},
    ]
    summary = summarize_messages(messages)
    assert (summary["count"], summary["images"], summary["roles"]) == (2, 2, ["system", "user"])
    assert summary["last_text"] == "Compare"
    changed = summarize_messages([messages[0], {"role": "user", "content": "Compare"}])
    assert changed["sha256"] != summary["sha256"] and changed["images"] == 0
