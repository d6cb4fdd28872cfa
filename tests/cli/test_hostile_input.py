"""Hostile input at the command line (issue 8, defects 3, 5 and 6): every bad row or line is a
reported problem with its number, the report is bounded, and user text is never rich markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.domain.canonical import MAX_DOCUMENT_BYTES
from kernelindex.domain.manifests import MAX_PROBLEMS
from kernelindex.sources.liger import bundled_csv_path
from kernelindex.sources.liger.parse import COLUMNS

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "manifests"
LINES = bundled_csv_path().read_text(encoding="utf-8").splitlines()
ROPE = next(line for line in LINES if line.startswith("rope,liger,forward,speed"))
CONFIG = '{"dtype": "torch.bfloat16", "seq_len": 2048, "num_q_heads": 32, "num_kv_heads": 8}'


def _row(**values: str) -> str:
    import csv
    import io

    fields = next(csv.reader([ROPE]))
    for column, value in values.items():
        fields[COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def _flat(output: str) -> str:
    """Rich wraps lines at the test terminal's width; compare text, not layout."""
    return " ".join(output.split())


def _import(tmp_path: Path, content: bytes) -> tuple[int, dict]:
    path = tmp_path / "liger.csv"
    path.write_bytes(content)
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    result = runner.invoke(app, ["import", "liger", "--dry-run", "--json", "--file", str(path), "--database", db])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.output) if result.exit_code == 0 else {"output": result.output}


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (_row(y_value_50="1e21", y_value_80="1e22"), "y_value_50 is 1e21 ms, over 9,007,199,254,740,991 ns"),
        (_row(x_value="2e19"), "x_value 2e19 is over 9,007,199,254,740,991"),
        (_row(extra_benchmark_config_str=CONFIG.replace("2048", "1" + "0" * 20)), "is outside ±9,007,199,254,740,991"),
        (_row(extra_benchmark_config_str="[" * 60_000 + "]" * 60_000), "nested deeper than 32 levels"),
        (_row(kernel_name="k" * 140_000), "field larger than field limit"),
        (_row(y_value_50="1_0"), "y_value_50 is '1_0', not a number"),
        (_row(y_value_20=" 0.05"), "y_value_20 is ' 0.05', not a number"),
        (_row(x_value="1_024"), "x_value is '1_024', not a number"),
        (_row(x_value="2048 "), "x_value is '2048 ', not a number"),
        (_row(timestamp="0001-01-01 00:00:00"), "timestamp is in the year 0001"),
    ],
    ids=["huge-ms", "huge-x", "huge-config-int", "deep-config", "long-field", "underscore-y", "spaced-y",
         "underscore-x", "spaced-x", "year-one"],
)
def test_one_bad_row_is_skipped_with_its_line_and_the_rest_imports(tmp_path: Path, row: str, reason: str) -> None:
    code, report = _import(tmp_path, ("\r\n".join([LINES[0], row, ROPE]) + "\r\n").encode())
    assert code == 0, report
    assert report["accepted"] == 1
    ((found, rows),) = report["skipped"].items()
    assert reason in found and rows == [2], found


def test_a_non_utf8_file_is_one_line_naming_the_offset(tmp_path: Path) -> None:
    content = ("\r\n".join([LINES[0], ROPE]) + "\r\n").encode() + b"rope,\xff\r\n"
    code, report = _import(tmp_path, content)
    assert code == 1
    assert f"not UTF-8: byte 0xff at offset {len(content) - 3:,} (line 3)" in report["output"]


def test_jsonl_lines_over_the_limit_and_many_errors_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"x": "' + b"a" * (MAX_DOCUMENT_BYTES + 10) + b'"}\n')
        for _ in range(MAX_PROBLEMS + 5):
            handle.write(b'{"apiVersion": "kernelindex/v1", "kind": "Nope", "spec": {}}\n')
    result = runner.invoke(app, ["import", "jsonl", str(path), "--dry-run", "--database",
                                 f"sqlite:///{tmp_path / 'c.sqlite'}"])
    output = _flat(result.output)
    assert result.exit_code == 1 and "Traceback" not in output
    assert f"hostile.jsonl:1: line is over the {MAX_DOCUMENT_BYTES:,}-byte limit" in output
    assert f"{MAX_PROBLEMS + 6:,} invalid line(s)" in output and "and 6 more" in output


def test_validate_names_a_file_whose_name_looks_like_markup(tmp_path: Path) -> None:
    (tmp_path / "d[").mkdir()
    path = tmp_path / "d[" / "b].json"
    path.write_bytes((EXAMPLES / "invalid" / "unknown-field.json").read_bytes())
    result = runner.invoke(app, ["manifest", "validate", str(path)])
    assert result.exit_code == 1 and "d[/b].json" in _flat(result.output) and "spec.homepag" in result.output


def test_validate_of_a_deep_document_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a":' * 60_000 + "1" + "}" * 60_000)
    result = runner.invoke(app, ["manifest", "validate", str(path)])
    assert result.exit_code == 1 and "nested deeper than 32 levels" in _flat(result.output)


@pytest.mark.parametrize("run", ["zz[/]", "abc[red]def"])
def test_retract_prints_user_text_as_given(tmp_path: Path, run: str) -> None:
    result = runner.invoke(app, ["retract", run, "--reason", "x", "--database", f"sqlite:///{tmp_path / 'c.sqlite'}"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert repr(run) in _flat(result.output)  # the message quotes the run reference verbatim
