"""Unpacking an uploaded bundle archive (tar or tar.gz) within fixed limits, checked before anything
a header declares is read.

Python's ``tarfile`` reads a GNU long name or a pax extended header whole, at whatever size its header
declares, before the caller sees the entry: a 1 MB upload declaring a 1 GiB long name cost the server
4 GB. So uploads are read here, one 512-byte header at a time: an extension (pax header, GNU long name)
is read only when it declares at most ``MAX_EXTENSION_BYTES``, an entry only when it is a bundle file
whose declared size is within that file's cap and the running total within ``MAX_UNPACKED_BYTES``, and
never more than ``MAX_ENTRIES`` headers. File data is read in 64 KiB pieces into memory, where the
bundle is verified (``trust/bundles.py``): nothing is written to disk. Errors never echo the archive's
bytes: a name appears cut to 64 safe characters.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from kernelindex.trust.bundles import (
    INDEX_FILE,
    MANIFESTS_FILE,
    MAX_INDEX_BYTES,
    MAX_MANIFESTS_BYTES,
    MAX_SAMPLES_BYTES,
    SAMPLES_DIR,
    SIGNATURE_FILE,
    BundleError,
)

BLOCK = 512
MAX_ENTRIES = 10_000  # headers of every kind, extensions included
MAX_EXTENSION_BYTES = 64 * 1024  # one pax header or GNU long name
MAX_EXTENSIONS_BYTES = 1024 * 1024  # all of them together
MAX_NAME_CHARS = 255
MAX_UNPACKED_BYTES = 128 * 1024 * 1024  # the declared sizes of all files together
_PIECE = 64 * 1024
_FILE_NAME = re.compile(rf"^({re.escape(INDEX_FILE)}|{re.escape(SIGNATURE_FILE)}|{re.escape(MANIFESTS_FILE)}|"
                        rf"{SAMPLES_DIR}/[0-9a-f]{{64}}\.json)$")
_DIR_NAME = re.compile(rf"^{SAMPLES_DIR}/?$")
_SAFE = re.compile(r"[^A-Za-z0-9._/-]")
_REFUSED_TYPES = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device", b"4": "a block device",
                  b"6": "a FIFO", b"7": "a contiguous file", b"K": "a GNU long link name", b"S": "a GNU sparse file"}
EXPECTED = f"a bundle holds only {INDEX_FILE}, {SIGNATURE_FILE}, {MANIFESTS_FILE} and {SAMPLES_DIR}/<sha256>.json"


class ArchiveError(BundleError):
    """The archive itself is unacceptable (not a tar, a foreign entry, over a limit)."""


def shown(name: str) -> str:
    """A name from the archive as an error may show it: at most 64 characters, unusual ones as ``?``."""
    cut = _SAFE.sub("?", name[:64])
    return f"'{cut}'" if len(name) <= 64 else f"'{cut}…' ({len(name):,} characters)"


def file_limit(name: str) -> int:
    if name in (INDEX_FILE, SIGNATURE_FILE):
        return MAX_INDEX_BYTES
    return MAX_MANIFESTS_BYTES if name == MANIFESTS_FILE else MAX_SAMPLES_BYTES


@dataclass
class _Header:
    name: str
    kind: bytes
    size: int


@dataclass
class _Pending:
    """What extension headers said about the next entry."""

    name: str | None = None
    size: int | None = None


Check = Callable[[Mapping[str, bytes]], object]


def unpack_archive(data: bytes | IO[bytes], *, signer: Check | None = None) -> dict[str, bytes]:
    """The bundle files of a tar or tar.gz archive, by name. ``signer`` is called with the files read so
    far as soon as both ``bundle.json`` and ``bundle.sig`` are among them (``ki publish`` puts them first),
    and may refuse the upload before the rest of the archive is decompressed."""
    source: IO[bytes] = io.BytesIO(data) if isinstance(data, bytes) else data
    magic = source.read(2)
    source.seek(-len(magic), os.SEEK_CUR)
    stream: Any = gzip.GzipFile(fileobj=source, mode="rb") if magic == b"\x1f\x8b" else source
    try:
        return _unpack(stream, signer)
    except (EOFError, OSError, zlib.error):
        raise ArchiveError("not a tar or tar.gz archive that can be read: the gzip stream is corrupt or cut "
                           "short; make it with `ki publish BUNDLE --server URL`") from None


def _unpack(stream: io.BufferedIOBase, signer: Check | None) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    pending, total, extensions = _Pending(), 0, 0
    for count in range(1, MAX_ENTRIES + 2):
        if count > MAX_ENTRIES:
            raise ArchiveError(f"the archive holds more than {MAX_ENTRIES:,} entries")
        header = _next_header(stream, count)
        if header is None:
            return files
        if header.kind in (b"x", b"g", b"L"):
            extensions += _read_extension(stream, header, pending, extensions)
            continue
        name = (pending.name if pending.name is not None else header.name).removeprefix("./")
        size = pending.size if pending.size is not None else header.size
        pending = _Pending()
        total += _check_entry(name, header.kind, size, total)
        if header.kind == b"5":
            continue
        if name in files:
            raise ArchiveError(f"archive entry {shown(name)} appears twice; a bundle holds each file once")
        files[name] = _file_data(stream, size, name)
        if signer is not None and INDEX_FILE in files and SIGNATURE_FILE in files:
            signer(files)
            signer = None
    raise AssertionError("unreachable")


def _check_entry(name: str, kind: bytes, size: int, total: int) -> int:
    """Refuse an entry from its header alone; the bytes it adds to the total."""
    if len(name) > MAX_NAME_CHARS:
        raise ArchiveError(f"archive entry {shown(name)} has a name over {MAX_NAME_CHARS} characters; {EXPECTED}")
    if kind in _REFUSED_TYPES:
        raise ArchiveError(f"archive entry {shown(name)} is {_REFUSED_TYPES[kind]}; {EXPECTED}, as regular files")
    if kind == b"5":
        if not _DIR_NAME.match(name) or size:
            raise ArchiveError(f"archive entry {shown(name)} is a directory other than {SAMPLES_DIR}/; {EXPECTED}")
        return 0
    if kind not in (b"0", b"\0") or not _FILE_NAME.match(name):
        raise ArchiveError(f"archive entry {shown(name)} is not a file of a bundle; {EXPECTED}")
    if size > file_limit(name):
        raise ArchiveError(f"archive entry {name} declares {size:,} bytes; the limit is {file_limit(name):,}")
    if total + size > MAX_UNPACKED_BYTES:
        raise ArchiveError(f"the archive's entries declare more than {MAX_UNPACKED_BYTES:,} bytes in all")
    return size


def _next_header(stream: io.BufferedIOBase, number: int) -> _Header | None:
    """The next header, or None at the end of the archive (a zero block, or the end of the stream)."""
    block = _read_exactly(stream, BLOCK)
    if not block or block == bytes(BLOCK):
        return None
    if len(block) < BLOCK or not _checksum_ok(block):
        what = "the archive is cut short" if len(block) < BLOCK else f"header {number:,} fails its checksum"
        raise ArchiveError(f"not a tar or tar.gz archive that can be read: {what}")
    name = _text(block[0:100])
    if block[257:262] == b"ustar" and (prefix := _text(block[345:500])):
        name = f"{prefix}/{name}"
    return _Header(name, block[156:157], _size_field(block[124:136], number))


def _checksum_ok(block: bytes) -> bool:
    try:
        stored = int(block[148:156].replace(b"\0", b" ").strip() or b"-1", 8)
    except ValueError:
        return False
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
    signed = unsigned - 256 * sum(1 for b in block[:148] + block[156:] if b > 127)
    return stored in (unsigned, signed)


def _size_field(field: bytes, number: int) -> int:
    if field[0] == 0x80:  # base-256, for sizes an octal field cannot hold
        return int.from_bytes(field[1:], "big")
    digits = field.replace(b"\0", b" ").strip() or b"0"
    if field[0] & 0x80 or not re.fullmatch(rb"[0-7]+", digits):
        raise ArchiveError(f"not a tar or tar.gz archive that can be read: header {number:,} has no valid size")
    return int(digits, 8)


def _text(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "replace")


def _read_extension(stream: io.BufferedIOBase, header: _Header, pending: _Pending, before: int) -> int:
    """A GNU long name or a pax header, read only when it is within MAX_EXTENSION_BYTES and all of them
    within MAX_EXTENSIONS_BYTES; the bytes it declared."""
    what = "GNU long name" if header.kind == b"L" else "pax extended header"
    if header.size > MAX_EXTENSION_BYTES:
        raise ArchiveError(f"the archive has a {what} of {header.size:,} bytes; the limit is "
                           f"{MAX_EXTENSION_BYTES:,} (a bundle's names are under 100 characters)")
    if before + header.size > MAX_EXTENSIONS_BYTES:
        raise ArchiveError(f"the archive's extended headers hold more than {MAX_EXTENSIONS_BYTES:,} bytes")
    raw = _read_exactly(stream, _padded(header.size))[:header.size]
    if len(raw) < header.size:
        raise ArchiveError("not a tar or tar.gz archive that can be read: the archive is cut short")
    if header.kind == b"L":
        pending.name = _text(raw)
    elif header.kind == b"x":
        records = _pax_records(raw)
        pending.name = records.get("path", pending.name)
        if "size" in records:
            # ASCII digits only: str.isdigit() also takes '²' or '①', which int() then refuses (a 500)
            if not re.fullmatch(r"[0-9]{1,20}", records["size"]):
                raise ArchiveError("the archive has a pax extended header whose size is not a number")
            pending.size = int(records["size"])
    return header.size


def _pax_records(raw: bytes) -> dict[str, str]:
    """``LENGTH KEY=VALUE\\n`` records; a malformed one refuses the archive."""
    records, position = {}, 0
    while position < len(raw) and raw[position:position + 1] != b"\0":
        match = re.match(rb"(\d{1,6}) ", raw[position:position + 7])
        length = int(match.group(1)) if match else 0
        record = raw[position:position + length]
        if not match or length <= len(match.group(0)) or len(record) < length or not record.endswith(b"\n") \
                or b"=" not in record:
            raise ArchiveError("the archive has a malformed pax extended header")
        key, _, value = record[len(match.group(0)):-1].partition(b"=")
        records[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        position += length
    return records


def _file_data(stream: io.BufferedIOBase, size: int, name: str) -> bytes:
    data = bytearray()
    while len(data) < size:
        piece = stream.read(min(size - len(data), _PIECE))
        if not piece:
            raise ArchiveError(f"not a tar or tar.gz archive that can be read: the archive ends inside {name}")
        data += piece
    _read_exactly(stream, _padded(size) - size)
    return bytes(data)


def _padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _read_exactly(stream: io.BufferedIOBase, size: int) -> bytes:
    parts, left = [], size
    while left:
        piece = stream.read(left)
        if not piece:
            break
        parts.append(piece)
        left -= len(piece)
    return b"".join(parts)
