"""Input limits (issue 8, defects 3 and 5): size, depth, value count, integer range and problem
count are bounded, refused with a message that names the limit, and never a traceback; every
line of the staged KernelIndex export and every shipped bundle fits inside them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kernelindex.domain.canonical import (
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    MAX_SAFE_INTEGER,
    MAX_VALUES,
    ManifestSyntaxError,
    check_json_value,
    strict_json_loads,
)
from kernelindex.domain.manifests import MAX_PROBLEMS, ManifestError, load_manifest_file, parse_manifest_text

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT.parent / "shared" / "data" / "kernelindex-export"
PROJECT = {"apiVersion": "kernelindex/v1", "kind": "SoftwareProject", "spec": {"name": "x", "kind": "library"}}


def _project(**spec: object) -> bytes:
    return json.dumps({**PROJECT, "spec": {**PROJECT["spec"], **spec}}).encode()


def test_a_document_over_the_size_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(b"[" + b"1," * (MAX_DOCUMENT_BYTES // 2) + b"1]")
    with pytest.raises(ManifestError, match=f"over the {MAX_DOCUMENT_BYTES:,}-byte limit"):
        load_manifest_file(path)


def test_a_huge_array_costs_little_and_lists_few_problems() -> None:
    started = time.perf_counter()
    with pytest.raises(ManifestError) as info:
        parse_manifest_text(_project(packages=[1] * (MAX_VALUES // 2)), "big.json")
    assert time.perf_counter() - started < 10
    assert len(info.value.problems) == MAX_PROBLEMS
    assert f"and {MAX_VALUES // 2 - MAX_PROBLEMS:,} more" in str(info.value)


def test_too_many_values_are_refused() -> None:
    with pytest.raises(ManifestError, match=f"more than {MAX_VALUES:,} JSON values"):
        parse_manifest_text(_project(packages=["a"] * (MAX_VALUES + 1)), "many.json")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 60_000])
def test_deep_nesting_is_refused_without_recursion_errors(depth: int) -> None:
    text = '{"a":' * depth + "1" + "}" * depth
    with pytest.raises(ManifestSyntaxError, match=f"nested deeper than {MAX_DEPTH} levels"):
        strict_json_loads(text)


@pytest.mark.parametrize("number", [str(MAX_SAFE_INTEGER + 1), "1" + "0" * 20, "-" + "9" * 5000])
def test_integers_json_cannot_hold_exactly_are_refused(number: str) -> None:
    with pytest.raises(ManifestError, match="is outside ±9,007,199,254,740,991"):
        parse_manifest_text(b'{"apiVersion":"kernelindex/v1","kind":"SoftwareProject","spec":{"name":' + number.encode()
                            + b',"kind":"library"}}', "int.json")


def test_built_manifests_are_held_to_the_integer_range_too() -> None:
    with pytest.raises(ManifestSyntaxError, match="outside"):
        check_json_value({"axes": {"batch": 2**63}})


def test_non_utf8_is_named_with_its_offset() -> None:
    with pytest.raises(ManifestError, match="not UTF-8: byte 0xff at offset 9"):
        parse_manifest_text(b'{"kind":"\xff"}', "latin1.json")


@pytest.mark.skipif(not EXPORT.is_dir(), reason="the staged export lives in shared/")
def test_every_line_of_the_staged_export_fits_the_limits() -> None:
    import zstandard

    for path in EXPORT.glob("*.jsonl.zst"):
        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
            buffer = b""
            while chunk := stream.read(1 << 20):
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line:
                        strict_json_loads(line)


def test_every_shipped_bundle_line_fits_the_limits() -> None:
    for path in (ROOT / "src" / "kernelindex" / "data" / "verified").glob("*/manifests.jsonl"):
        for line in path.read_bytes().splitlines():
            strict_json_loads(line)
