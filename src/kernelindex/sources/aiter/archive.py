"""The shipped aiter tables: one zstandard-compressed tar of the upstream CSV files, byte for byte,
and PROVENANCE.json with every file's sha256 (checked on every read), the upstream commit and the
archive's own digest. ``scripts/derive-aiter-archive`` makes both from the staged copy."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

import zstandard

from kernelindex.sources.base import shipped

ARCHIVE = "aiter-tuned-configs.tar.zst"
PROVENANCE = "PROVENANCE.json"
NOTICE = "LICENSE-aiter.txt"
UPSTREAM = "https://github.com/ROCm/aiter"
UPSTREAM_COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"
UPSTREAM_DATE = "2026-08-22T00:00:00Z"  # the commit's date: the tuner records no time per row


class ArchiveError(ValueError):
    """The shipped tables are damaged or do not match their provenance; the message says which file."""


@dataclass(frozen=True)
class TableFile:
    name: str  # path inside aiter/configs/, e.g. "model_configs/dsv3_bf16_tuned_gemm.csv"
    content: bytes


def bundled_archive_path() -> Path:
    return shipped("aiter", ARCHIVE)


def notice_text() -> str:
    return shipped("aiter", NOTICE).read_text(encoding="utf-8")


def pack(files: list[TableFile]) -> bytes:
    """A deterministic tar (sorted names, fixed owner and time) compressed with zstandard."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for file in sorted(files, key=lambda f: f.name):
            info = tarfile.TarInfo(file.name)
            info.size, info.mtime, info.mode = len(file.content), 1787356800, 0o444
            tar.addfile(info, io.BytesIO(file.content))
    return zstandard.ZstdCompressor(level=19).compress(buffer.getvalue())


def unpack(content: bytes, locator: str = ARCHIVE) -> list[TableFile]:
    try:
        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(content)).read()
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            return [TableFile(m.name, _member(tar, m)) for m in tar.getmembers() if m.isfile()]
    except (zstandard.ZstdError, tarfile.TarError) as exc:
        raise ArchiveError(f"{locator}: not a zstandard-compressed tar of aiter tables ({exc})") from None


def _member(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    assert handle is not None  # a regular file always has a handle
    return handle.read()


def checked(files: list[TableFile], provenance: dict) -> list[TableFile]:
    """The files, after every sha256 matched PROVENANCE.json (and no file is missing or extra)."""
    expected: dict[str, str] = provenance["files"]
    found = {f.name: f for f in files}
    if missing := sorted(set(expected) - set(found)):
        raise ArchiveError(f"{ARCHIVE}: missing {', '.join(missing)} (listed in {PROVENANCE}); reinstall the package")
    if extra := sorted(set(found) - set(expected)):
        raise ArchiveError(f"{ARCHIVE}: {', '.join(extra)} not listed in {PROVENANCE}; "
                           "re-run scripts/derive-aiter-archive")
    for name, digest in expected.items():
        if hashlib.sha256(found[name].content).hexdigest() != digest:
            raise ArchiveError(f"{ARCHIVE}: {name} does not match its sha256 in {PROVENANCE}; reinstall the package")
    return [found[name] for name in sorted(expected)]


def bundled_files(path: Path | None = None) -> list[TableFile]:
    """The shipped tables, checked against their provenance."""
    archive = path or bundled_archive_path()
    provenance = json.loads((archive.parent / PROVENANCE).read_text(encoding="utf-8"))
    return checked(unpack(archive.read_bytes(), str(archive)), provenance)


def provenance_of(files: list[TableFile], archive: bytes) -> dict:
    return {
        "upstream": {"repository": UPSTREAM, "commit": UPSTREAM_COMMIT, "folder": "aiter/configs/",
                     "date": UPSTREAM_DATE},
        "archive": {"file": ARCHIVE, "sha256": hashlib.sha256(archive).hexdigest(), "bytes": len(archive)},
        "files": {f.name: hashlib.sha256(f.content).hexdigest() for f in sorted(files, key=lambda f: f.name)},
        "license": f"MIT, {NOTICE} (Copyright © Advanced Micro Devices, Inc.)",
        "attribution": "AMD aiter (ROCm/aiter), tuned configs",
        "made_by": "scripts/derive-aiter-archive",
        "rule": "the *tuned* tables only (aiter/configs/*tuned*.csv and model_configs/*tuned*.csv), byte for byte",
    }
