"""Hostile import files (issue 23, item 10): a 64 KB .zst holding a 2 GiB line took 42 s and 4.3 GB;
32 KB of compressed newlines 213 s; deep nesting or a missing field gave tracebacks; `ki import liger
--file` read a whole 3 GiB file (or /dev/zero) before its cap. Every file here is made by the test."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import zstandard
from typer.testing import CliRunner

from kernelindex.cli import app as ki
from kernelindex.sources.base import FileTransport, InputFileError
from kernelindex.sources.kernelindex_export import bundled_export_path
from kernelindex.sources.kernelindex_export.importer import map_export_content
from kernelindex.sources.kernelindex_export.read import (
    MAX_DEPTH,
    MAX_EXPORT_FILE_BYTES,
    MAX_LINE_BYTES,
    MAX_LINES,
    ExportFormatError,
    read_export,
)
from kernelindex.sources.liger.parse import MAX_CSV_BYTES

runner = CliRunner()
SOURCE = b'{"table": "sources", "row": {"id": "s1", "slug": "flashinfer-bench"}}\n'


def _zst(pieces: int, piece: bytes, head: bytes = b"") -> bytes:
    """``head`` then ``piece`` repeated ``pieces`` times, zstandard-compressed as a stream."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as writer:
        writer.write(head)
        for _ in range(pieces):
            writer.write(piece)
    return out.getvalue()


def _import(tmp_path: Path, path: Path, kind: str = "kernelindex-export") -> tuple[Any, float]:
    """Run the CLI import; its result and seconds."""
    args = ["import", kind, *([str(path)] if kind == "kernelindex-export" else ["--file", str(path)]),
            "--dry-run", "--json", "--database", f"sqlite:///{tmp_path / 'c.sqlite'}"]
    started = time.perf_counter()
    result = runner.invoke(ki, args)
    return result, time.perf_counter() - started


def _peak(action: Any) -> int:
    """The peak memory traced while ``action`` fails as it should."""
    tracemalloc.start()
    try:
        with pytest.raises((ExportFormatError, InputFileError)):
            action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _refused(result: Any, *named: str) -> str:
    output = " ".join(result.output.split())
    assert result.exit_code == 1 and "Traceback" not in output and result.exception is None or \
        isinstance(result.exception, SystemExit), output
    # The console wraps long lines wherever the width falls, a temporary path's length decides where (even
    # inside "name.zst:1000001:"): compare without whitespace.
    squeezed = "".join(output.split())
    assert all("".join(n.split()) in squeezed for n in named), output
    return output


def test_a_two_gigabyte_line_is_refused_after_its_first_megabyte(tmp_path: Path) -> None:
    bomb = tmp_path / "line.jsonl.zst"
    bomb.write_bytes(_zst(2048, b"a" * 2**20, head=SOURCE))  # 2 GiB of one line after a real first line
    assert bomb.stat().st_size < 128 * 1024
    result, seconds = _import(tmp_path, bomb)
    _refused(result, "line.jsonl.zst:2:", f"longer than {MAX_LINE_BYTES:,} bytes", "download it again")
    assert seconds < 10 and _peak(lambda: read_export(bomb.read_bytes())) < 8 * 2**20


def test_compressed_newlines_are_refused_at_the_line_cap(tmp_path: Path) -> None:
    newlines = tmp_path / "newlines.jsonl.zst"
    newlines.write_bytes(_zst(64, b"\n" * 2**20, head=SOURCE))  # 64 Mi lines in a few KB
    result, seconds = _import(tmp_path, newlines)
    _refused(result, f":{MAX_LINES + 1:}:", f"more than {MAX_LINES:,} lines")
    assert seconds < 20


@pytest.mark.parametrize(("line", "named"), [
    (b'{"table": "sources", "row": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", f"deeper than {MAX_DEPTH} levels"),
    (b'{"table": "sources", "row": {"id": "s2", "slug": ' + b'{"a": ' * 40 + b"1" + b"}" * 40 + b"}}",
     f"deeper than {MAX_DEPTH} levels"),
    (b'{"table": "sources", "row": {"id": "s2"}}', "the sources row's field 'slug' is missing"),
    (b'{"table": "benchmark_runs", "row": {"id": "r", "sourceId": "s1", "workloadId": ["x"]}}',
     "field 'workloadId' is not a string"),
    (b'{"table": "sources"}', "expected a JSON object with 'table' and 'row'"),
    (b'{"table": "sources", "row": {"id": "s\xff"}}', "not JSON"),
])
def test_bad_lines_name_the_line_and_what_to_do(tmp_path: Path, line: bytes, named: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(SOURCE + line + b"\n")
    result, seconds = _import(tmp_path, path)
    _refused(result, "bad.jsonl:2:", named, "download it again")
    assert seconds < 10


def test_a_run_missing_a_deeper_field_is_skipped_with_a_reason_and_the_rest_imports() -> None:
    lines = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(bundled_export_path().read_bytes())).read()
    records = [json.loads(line) for line in lines.splitlines()]
    run = next(r for r in records if r["table"] == "benchmark_runs")
    del run["row"]["manifest"]["run"]["spec"]  # a field the mapping needs, deep in the row
    workload = next(r for r in records if r["table"] == "workloads" and r["row"]["id"] != run["row"]["workloadId"])
    workload["row"]["manifest"] = {"kind": "WorkloadCase", "spec": 7}
    content = b"\n".join(json.dumps(r).encode() for r in records)
    report = map_export_content(content, "hostile.jsonl", "sha256:test").to_json()
    skipped = {reason: n for s in report["sources"].values()
               for reason, n in s["tables"]["benchmark_runs"]["skipped"].items() if reason.startswith("damaged row")}
    assert skipped and sum(skipped.values()) >= 2
    assert sum(s["tables"]["benchmark_runs"]["published"] for s in report["sources"].values()) > 1000


def test_plain_errors_come_from_the_reader_too() -> None:
    with pytest.raises(ExportFormatError, match="<export>:1: not a catalog export line"):
        read_export(b"[1, 2]\n")


@pytest.mark.parametrize(("kind", "limit"), [("liger", MAX_CSV_BYTES), ("kernelindex-export", MAX_EXPORT_FILE_BYTES)])
def test_files_over_the_limit_or_not_regular_are_refused_unread(tmp_path: Path, kind: str, limit: int) -> None:
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as handle:
        handle.truncate(limit + 1)  # sparse: nothing is written, and nothing may be read
    result, seconds = _import(tmp_path, huge, kind)
    _refused(result, f"{limit + 1:,} bytes, over the {limit:,}-byte limit")
    assert seconds < 10 and _peak(FileTransport(huge, limit).fetch) < 2**20
    result, seconds = _import(tmp_path, Path("/dev/zero"), kind)
    _refused(result, "/dev/zero is not a regular file")
    assert seconds < 10 and _peak(FileTransport(Path("/dev/zero"), limit).fetch) < 2**20


def test_jsonl_refuses_a_device_a_huge_file_and_endless_newlines(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelindex.catalog import export

    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    zero = runner.invoke(ki, ["import", "jsonl", "/dev/zero", "--dry-run", "--database", db])
    _refused(zero, "/dev/zero is not a regular file")  # it used to loop forever over one endless line
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:
        handle.truncate(export.MAX_JSONL_BYTES + 1)
    _refused(runner.invoke(ki, ["import", "jsonl", str(huge), "--dry-run", "--database", db]),
             f"over the {export.MAX_JSONL_BYTES:,}-byte limit")
    monkeypatch.setattr(export, "MAX_JSONL_LINES", 1000)  # the cap, at a size a test sends quickly
    newlines = tmp_path / "newlines.jsonl"
    newlines.write_bytes(b"\n" * 5000)
    _refused(runner.invoke(ki, ["import", "jsonl", str(newlines), "--dry-run", "--database", db],
                           env={"COLUMNS": "500"}),
             "newlines.jsonl:1001: more than 1,000 lines")
