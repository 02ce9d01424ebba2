"""A runsc checkpoint re-encoded with stored chunks holds exactly the same state; other files are left alone.

The real image is exercised by tests/runtime/test_restore.py (every restore there reads one); here,
state files built in the layout of runsc 0.0~20221219 check the re-encoding byte for byte, and files
of any other layout check that nothing is touched.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import pytest

from pixelbox.runtime.backends.statefile import store_uncompressed

CHUNK = 1024 * 1024


def _state_file(chunks: list[bytes], metadata: dict[str, str] | None = None, level: int = 1) -> bytes:
    meta = json.dumps(metadata or {"_timestamp": "2026-11-28 10:20:46 +0000 UTC"}).encode()
    out = [b"gVisorSF", struct.pack(">Q", len(meta)), meta, os.urandom(32), struct.pack(">I", CHUNK)]
    for raw in chunks:
        deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        data = deflater.compress(raw) + deflater.flush()
        out.append(struct.pack(">I", len(data)) + data)
    return b"".join(out)


def _contents(data: bytes) -> tuple[bytes, list[bytes], list[int]]:
    """The header up to the first chunk, each chunk inflated, and each chunk's stored length."""
    (length,) = struct.unpack(">Q", data[8:16])
    offset = 16 + length + 32 + 4
    head, chunks, sizes = data[:offset], [], []
    while offset < len(data):
        (size,) = struct.unpack(">I", data[offset : offset + 4])
        chunks.append(zlib.decompress(data[offset + 4 : offset + 4 + size], -zlib.MAX_WBITS))
        sizes.append(size)
        offset += 4 + size
    return head, chunks, sizes


def test_chunks_are_stored_and_hold_the_same_bytes(tmp_path: Path) -> None:
    memory = [os.urandom(CHUNK // 2) + bytes(CHUNK // 2), b"kernel state " * 5000, bytes(CHUNK), b"x"]
    image = tmp_path / "checkpoint.img"
    original = _state_file(memory)
    image.write_bytes(original)
    assert store_uncompressed(image) is True
    rewritten = image.read_bytes()
    head, chunks, sizes = _contents(rewritten)
    assert head == _contents(original)[0]
    assert chunks == memory
    assert all(size >= len(raw) for size, raw in zip(sizes, memory, strict=True))  # stored, not compressed
    assert not [p for p in tmp_path.iterdir() if p != image]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_state_file([b"a" * 100], {"compression": "none"}), id="newer-runsc-with-compression-flag"),
        pytest.param(_state_file([b"a" * 100])[:-3], id="truncated"),
        pytest.param(_state_file([b"a" * 100]) + os.urandom(32), id="keyed-stream-digests"),
        pytest.param(b"not a state file at all", id="other-file"),
        pytest.param(_state_file([bytes(CHUNK + 1)]), id="chunk-larger-than-chunk-size"),
    ],
)
def test_any_other_layout_is_left_unchanged(tmp_path: Path, data: bytes) -> None:
    image = tmp_path / "checkpoint.img"
    image.write_bytes(data)
    assert store_uncompressed(image) is False
    assert image.read_bytes() == data
    assert not [p for p in tmp_path.iterdir() if p != image]
