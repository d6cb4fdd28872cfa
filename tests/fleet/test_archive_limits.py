"""Hostile bundle archives: every header size is checked before what it declares is read.

The attack of issue 23 (item 3): a 1 MB upload declaring a 1 GiB GNU long name took the server from
0.9 to 5.0 GB and its 422 echoed 1.07 GB. Each archive here is crafted header by header."""

from __future__ import annotations

import gzip
import io
import tarfile
import time
import tracemalloc

import pytest
from fastapi.testclient import TestClient
from fleet_helpers import bearer, shipped

from kernelindex.catalog.db import Catalog
from kernelindex.trust import archive
from kernelindex.trust.archive import MAX_ENTRIES, MAX_EXTENSION_BYTES, ArchiveError
from kernelindex.trust.uploads import pack_bundle, unpack_bundle

SAMPLE = "samples/" + "ab" * 32 + ".json"


def _header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(tarfile.USTAR_FORMAT if kind != tarfile.GNUTYPE_LONGNAME else tarfile.GNU_FORMAT)


def _refusal(data: bytes) -> tuple[str, float, int]:
    """The error, the seconds it took and the peak memory allocated meanwhile."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ArchiveError) as refused:
            unpack_bundle(data)
        return str(refused.value), time.perf_counter() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gigabyte_long_name_is_refused_from_its_header() -> None:
    bomb = _header("././@LongLink", 2**30, tarfile.GNUTYPE_LONGNAME) + b"a" * 1_040_000
    error, seconds, peak = _refusal(bomb)
    assert "GNU long name of 1,073,741,824 bytes" in error and f"{MAX_EXTENSION_BYTES:,}" in error
    assert len(error) < 300 and "aaaa" not in error
    assert seconds < 2 and peak < 4 * 2**20  # the name is never read: the 1 MB upload is all there is
    pax = _header("././@PaxHeader", 2**30, tarfile.XHDTYPE) + b"a" * 4096
    assert "pax extended header of 1,073,741,824 bytes" in _refusal(gzip.compress(pax))[0]


def test_declared_sizes_and_counts_are_refused_before_any_data(monkeypatch: pytest.MonkeyPatch) -> None:
    over_one = _header("manifests.jsonl", 64 * 2**20 + 1)
    assert "manifests.jsonl declares 67,108,865 bytes; the limit is 67,108,864" in _refusal(over_one)[0]
    entries = gzip.compress(_header("samples/", 0, tarfile.DIRTYPE) * (MAX_ENTRIES + 1))
    assert f"more than {MAX_ENTRIES:,} entries" in _refusal(entries)[0]
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 3 * 2**20)  # the sum, at a size a test can send
    mib = [_header(SAMPLE.replace("ab", f"{i:02x}", 1), 2**20) + bytes(2**20) for i in range(3)]
    fourth = _header(SAMPLE.replace("ab", "ff", 1), 1)  # declared, with no data: refused from its header
    assert "more than 3,145,728 bytes in all" in _refusal(gzip.compress(b"".join(mib) + fourth))[0]


def test_errors_show_a_bounded_sanitised_name() -> None:
    long_name = "x" * 200 + "\x1b[31m"
    record = f"path={long_name}\n".encode()
    record = f"{len(record) + 4} ".encode() + record
    pax = _header("././@PaxHeader", len(record), tarfile.XHDTYPE) + record.ljust(512, b"\0")
    error = _refusal(pax + _header("whatever", 0))[0]
    assert "'" + "x" * 64 + "…' (205 characters)" in error and "\x1b" not in error and len(error) < 250
    link = _header("bundle.json", 0, tarfile.SYMTYPE)
    assert "'bundle.json' is a symbolic link" in _refusal(link)[0]


@pytest.mark.parametrize("form", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_a_real_bundle_unpacks_in_every_tar_format(form: int) -> None:
    source = shipped("rope")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=form, pax_headers={"comment": "é" * 100}) as tar:
        for file in sorted(p for p in source.rglob("*") if p.is_file()):
            tar.add(file, arcname="./" + file.relative_to(source).as_posix(), recursive=False)
    unpacked = unpack_bundle(buffer.getvalue())
    assert unpacked == {p.relative_to(source).as_posix(): p.read_bytes() for p in source.rglob("*") if p.is_file()}


def test_the_bomb_over_http_is_a_short_422_and_changes_nothing(
        client: TestClient, fleet_catalog: Catalog, tokens: dict[str, str]) -> None:
    bomb = _header("././@LongLink", 2**30, tarfile.GNUTYPE_LONGNAME) + b"a" * 1_040_000
    answer = client.post("/api/v1/bundles", content=bomb,
                         headers={**bearer(tokens["bundles:write"]), "content-type": "application/x-tar"})
    assert (answer.status_code, answer.json()["code"]) == (422, "archive_invalid")
    assert len(answer.content) < 600 and fleet_catalog.version() == 1
    assert client.post("/api/v1/bundles", content=pack_bundle(shipped("rope")), headers={
        **bearer(tokens["bundles:write"]), "content-type": "application/gzip"}).status_code == 201
