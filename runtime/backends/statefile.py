"""Re-encode a gVisor checkpoint without compression, so each restore does not inflate it again.

A ``runsc checkpoint`` image (``checkpoint.img``) is a state file: a magic header, a JSON metadata
block and its 32-byte digest, then the sentry's state and memory through gVisor's ``compressio``
stream: a 4-byte chunk size, then chunks of ``[4-byte length][raw DEFLATE data]``. The runsc of
this machine (Debian's 0.0~20221219) always compresses (``flate.BestSpeed``) and has no flag to turn
it off (later runsc versions have ``--compression=none``, recorded in the metadata). Inflating the
kernel's 45 MB of memory is most of a restore's "Memory load" (measured: 300 ms of it at load 7,
against 170 ms for the same image stored).

So the image is rewritten once per template with every chunk as *stored* DEFLATE blocks (level 0):
still valid DEFLATE, byte-for-byte the same state after inflation, which runsc copies instead of
decoding. Anything that does not parse exactly as that layout (a newer runsc, a keyed stream with
per-chunk digests) is left as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import zlib
from pathlib import Path
from typing import BinaryIO

MAGIC = b"gVisorSF"
DIGEST_SIZE = 32
MAX_METADATA = 16 * 1024 * 1024


class NotThisFormat(ValueError):
    """The file is not a state file of the layout this module knows."""


def _exactly(source: BinaryIO, size: int) -> bytes:
    data = source.read(size)
    if len(data) != size:
        raise NotThisFormat("truncated state file")
    return data


def _header(source: BinaryIO) -> tuple[bytes, int]:
    """The bytes up to the first chunk (kept as they are), and the stream's chunk size."""
    magic = _exactly(source, len(MAGIC))
    if magic != MAGIC:
        raise NotThisFormat("no gVisor state file header")
    length_bytes = _exactly(source, 8)
    (length,) = struct.unpack(">Q", length_bytes)
    if length > MAX_METADATA:
        raise NotThisFormat("metadata too large")
    metadata = _exactly(source, length)
    try:
        fields = json.loads(metadata)
    except ValueError as exc:
        raise NotThisFormat("metadata is not JSON") from exc
    if not isinstance(fields, dict) or "compression" in fields:
        raise NotThisFormat("a runsc that records its compression (use its --compression flag instead)")
    digest = _exactly(source, DIGEST_SIZE)
    chunk_bytes = _exactly(source, 4)
    (chunk_size,) = struct.unpack(">I", chunk_bytes)
    if not 0 < chunk_size <= 64 * 1024 * 1024:
        raise NotThisFormat("implausible chunk size")
    return magic + length_bytes + metadata + digest + chunk_bytes, chunk_size


def _inflate(data: bytes, chunk_size: int) -> bytes:
    """One chunk's contents; it must be exactly one complete raw DEFLATE stream."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    try:
        raw = inflater.decompress(data, chunk_size + 1)
    except zlib.error as exc:
        raise NotThisFormat(f"chunk is not raw DEFLATE: {exc}") from exc
    if not inflater.eof or inflater.unused_data or inflater.unconsumed_tail or len(raw) > chunk_size:
        raise NotThisFormat("chunk is not one complete DEFLATE stream of at most the chunk size")
    return raw


def _stored(raw: bytes) -> bytes:
    deflater = zlib.compressobj(0, zlib.DEFLATED, -zlib.MAX_WBITS)
    return deflater.compress(raw) + deflater.flush()


def _reencode(source: BinaryIO, target: BinaryIO) -> None:
    head, chunk_size = _header(source)
    target.write(head)
    while True:
        length_bytes = source.read(4)
        if not length_bytes:
            return
        if len(length_bytes) != 4:
            raise NotThisFormat("truncated chunk length")
        (length,) = struct.unpack(">I", length_bytes)
        stored = _stored(_inflate(_exactly(source, length), chunk_size))
        target.write(struct.pack(">I", len(stored)) + stored)


def store_uncompressed(image: Path) -> bool:
    """Rewrite the checkpoint ``image`` with stored (uncompressed) DEFLATE chunks, atomically;
    whether it was rewritten (False: not the layout this module knows, left unchanged)."""
    partial = image.with_name(f".{image.name}.{os.getpid()}.stored")
    try:
        with open(image, "rb") as source, open(partial, "wb") as target:
            _reencode(source, target)
        partial.replace(image)
        return True
    except (NotThisFormat, OSError):  # kept compressed: slower to restore, as correct
        return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
