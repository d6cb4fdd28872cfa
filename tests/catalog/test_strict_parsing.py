"""Lenient parsing (issue 8, defect 14), published on SQLite and PostgreSQL: identical Liger rows are
imported once and reported with their row numbers; a number with '_' or spaces and a year no
measurement can have are skipped with their reason; nothing of them reaches the catalog."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from sqlalchemy import func, select
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import RunRow
from kernelindex.cli import app
from kernelindex.sources.liger import bundled_csv_path
from kernelindex.sources.liger.parse import COLUMNS, DUPLICATE_ROW

runner = CliRunner()
LINES = bundled_csv_path().read_text(encoding="utf-8").splitlines()
SPEED = [line for line in LINES if line.startswith("rope,") and ",speed," in line][:3]


def _with(line: str, **values: str) -> str:
    fields = next(csv.reader([line]))
    for column, value in values.items():
        fields[COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def _runs(catalog: Catalog) -> int:
    with catalog.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(RunRow)).scalar_one()


def test_duplicates_and_lenient_numbers_are_reported_not_counted(empty_catalog: Catalog, tmp_path: Path) -> None:
    a, b, c = SPEED
    rows = [LINES[0], a, b, a, c, a, _with(c, y_value_50="1_0"), _with(c, timestamp="0001-01-01 00:00:00")]
    path = tmp_path / "liger.csv"
    path.write_text("\r\n".join(rows) + "\r\n", encoding="utf-8")
    result = runner.invoke(app, ["import", "liger", "--publish", "--json", "--file", str(path),
                                 "--database", empty_catalog.url])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["rows_read"], report["accepted"], report["skipped_total"]) == (7, 3, 4)
    assert report["skipped"][DUPLICATE_ROW] == [4, 6]  # line numbers, the header is line 1
    assert report["skipped"]["timestamp is in the year 0001: a measurement's time must lie in 2007–2100"] == [8]
    assert [r for r, lines in report["skipped"].items() if lines == [7]][0].startswith("y_value_50 is '1_0'")
    assert "2 duplicate row(s) skipped (each identical to an earlier row): rows 4, 6" in report["warnings"]
    published = _runs(empty_catalog)
    assert published == report["new"]["BenchmarkRun"] >= 3

    human = runner.invoke(app, ["import", "liger", "--dry-run", "--file", str(path), "--database", empty_catalog.url])
    assert human.exit_code == 0 and "2 duplicate row(s) skipped" in " ".join(human.output.split())
    assert _runs(empty_catalog) == published
