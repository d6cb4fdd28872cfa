from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.readmodel.operations import operations_index
from kernelindex.sources.base import FileTransport
from kernelindex.sources.liger import bundled_csv_path, import_liger
from kernelindex.sources.liger.parse import COLUMNS, HeaderError


def count(catalog: Catalog, table=RunRow) -> int:  # noqa: ANN001
    with catalog.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_bundled_csv_is_the_upstream_snapshot() -> None:
    from kernelindex.domain.canonical import bytes_digest

    assert bytes_digest(bundled_csv_path().read_bytes()) == (
        "sha256:5ba5b0462dc6497133a1579866d3b01ba170ea42f9eab8cce05c2a2d98095602"
    )


def test_full_import_counts(liger_catalog: Catalog) -> None:
    assert count(liger_catalog) == 2448  # 1,649 speed rows and 799 memory rows
    summary = {s.slug: s for s in operations_index(liger_catalog)}
    assert (summary["rope"].eligible_runs, summary["rope"].workloads) == (48, 7)
    assert (summary["embedding"].eligible_runs, summary["embedding"].workloads) == (96, 16)
    assert len(summary) == 33  # 35 kernels; tiled MLPs share the swiglu / geglu operations


def test_every_kernel_has_a_curated_spec(empty_catalog: Catalog) -> None:
    report = import_liger(empty_catalog, dry_run=True, actor="test")
    assert report.rows_read == 2448 and report.accepted == 2448 and not report.skipped


def test_dry_run_writes_nothing(empty_catalog: Catalog) -> None:
    report = import_liger(empty_catalog, dry_run=True, actor="test")
    assert report.new["BenchmarkRun"] == 2448 and not report.published
    assert count(empty_catalog) == 0 and count(empty_catalog, ObjectRow) == 0
    assert empty_catalog.version() == 0


def test_republishing_inserts_nothing(liger_catalog: Catalog) -> None:
    version = liger_catalog.version()
    again = import_liger(liger_catalog, dry_run=False, actor="test")
    assert sum(again.new.values()) == 0 and again.existing["BenchmarkRun"] == 2448
    assert count(liger_catalog) == 2448 and liger_catalog.version() == version


def test_overlapping_sweeps_make_one_workload_with_two_runs(liger_catalog: Catalog, now: datetime) -> None:
    from kernelindex.readmodel.operations import operation_page

    page = operation_page(liger_catalog, "rope", now=now)
    selected = next(w for w in page.workloads if w.selected)
    assert selected.axes == {"seq": 2048, "hidden": 8192, "q_heads": 32, "kv_heads": 8}
    assert selected.eligible_runs == 12  # 2 providers × 2 sweeps × 3 modes


GOOD = bundled_csv_path().read_text(encoding="utf-8").splitlines()
ROPE_ROW = next(line for line in GOOD if line.startswith("rope,liger,forward,speed"))


def _csv(tmp_path: Path, rows: list[str], header: str | None = None) -> FileTransport:
    path = tmp_path / "liger.csv"
    path.write_text("\r\n".join([header or GOOD[0], *rows]) + "\r\n", encoding="utf-8")
    return FileTransport(path)


def _replace(row: str, column: str, value: str) -> str:
    import csv
    import io

    fields = next(csv.reader([row]))
    fields[COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (ROPE_ROW + ",extra", "ragged row: 16 fields"),
        (",".join(ROPE_ROW.split(",")[:5]), "ragged row: 5 fields"),
        (_replace(ROPE_ROW, "y_value_50", "fast"), "y_value_50 is 'fast', not a number"),
        (_replace(ROPE_ROW, "y_value_20", "-0.1"), "y_value_20 is -0.1: a time must be positive"),
        (_replace(_replace(ROPE_ROW, "y_value_20", "0"), "y_value_50", "0"), "y_value_50 is 0: a time must be"),
        (
            _replace(_replace(ROPE_ROW, "y_value_20", "1e-300"), "y_value_50", "1e-300"),
            "y_value_50 is 1e-300 ms, below 1 ns",
        ),
        (_replace(ROPE_ROW, "y_value_20", "0.0000004"), "y_value_20 is 0.0000004 ms, below 1 ns"),
        (_replace(ROPE_ROW, "y_value_80", "nan"), "y_value_80 is 'nan', not a number"),
        (_replace(ROPE_ROW, "extra_benchmark_config_str", "{not json"), "bad JSON"),
        (_replace(ROPE_ROW, "kernel_name", "warp_drive"), "unknown kernel 'warp_drive'"),
        (_replace(ROPE_ROW, "gpu_name", "NVIDIA Quantum 9000"), "unknown GPU 'NVIDIA Quantum 9000'"),
        (_replace(ROPE_ROW, "kernel_provider", "mystery"), "unknown provider 'mystery'"),
        (_replace(ROPE_ROW, "timestamp", "yesterday"), "timestamp is not"),
        (
            _replace(
                ROPE_ROW,
                "extra_benchmark_config_str",
                '{"dtype": "torch.bfloat16", "seq_len": 2048, "num_q_heads": 32, "num_kv_heads": 8, "warp": 1}',
            ),
            "config key 'warp'",
        ),
    ],
)
def test_malformed_rows_are_skipped_counted_and_the_rest_imports(
    empty_catalog: Catalog, tmp_path: Path, row: str, reason: str
) -> None:
    report = import_liger(empty_catalog, _csv(tmp_path, [row, ROPE_ROW]), dry_run=False, actor="test")
    assert report.accepted == 1 and report.skipped_total == 1
    ((found, rows),) = report.skipped.items()
    assert reason in found and rows == [2]
    assert count(empty_catalog) == 1


def test_duplicate_key_in_config_json_is_rejected(empty_catalog: Catalog, tmp_path: Path) -> None:
    row = _replace(ROPE_ROW, "extra_benchmark_config_str", '{"dtype": "torch.bfloat16", "dtype": "torch.float32"}')
    report = import_liger(empty_catalog, _csv(tmp_path, [row]), dry_run=True, actor="test")
    assert "bad JSON" in next(iter(report.skipped))


@pytest.mark.parametrize("header", [",".join(COLUMNS[:-1]), ",".join(COLUMNS) + ",extra"])
def test_missing_or_extra_column_is_a_clear_error(empty_catalog: Catalog, tmp_path: Path, header: str) -> None:
    with pytest.raises(HeaderError, match="15 columns"):
        import_liger(empty_catalog, _csv(tmp_path, [ROPE_ROW], header=header), dry_run=True, actor="test")


CE_ROW = next(line for line in GOOD if line.startswith("cross_entropy,liger,forward,speed"))


@pytest.mark.parametrize(("column", "value"), [
    ("extra_benchmark_config_str", '{"B": -8, "T": 2048}'),
    ("extra_benchmark_config_str", '{"B": 0, "T": 2048}'),
    ("x_value", "-8192"),
])
def test_non_positive_sizes_are_refused_at_import(empty_catalog: Catalog, tmp_path: Path, column: str,
                                                  value: str) -> None:
    """Issue 23 item 11: a row with B = -8 became the shape [-16384, 5000] with floor 0 and ranked #1."""
    report = import_liger(empty_catalog, _csv(tmp_path, [_replace(CE_ROW, column, value), ROPE_ROW]), dry_run=False,
                          actor="test")
    assert report.accepted == 1 and report.skipped_total == 1
    ((found, rows),) = report.skipped.items()
    assert rows == [2] and ("non-positive size" in found or "not a positive integer" in found), found
    assert count(empty_catalog) == 1


def test_a_time_under_the_physical_floor_is_flagged_and_never_ranked(empty_catalog: Catalog, tmp_path: Path) -> None:
    """Issue 23 item 11: a 1 ns cross-entropy row ranked #1 at 2.5e-6 of its physical floor."""
    from datetime import UTC

    from kernelindex.readmodel.loading import load_operation
    from kernelindex.readmodel.operations import operation_page

    fast = _replace(_replace(_replace(CE_ROW, "y_value_50", "0.000001"), "y_value_20", "0.000001"),
                    "y_value_80", "0.000001")
    slow = CE_ROW
    import_liger(empty_catalog, _csv(tmp_path, [fast, slow]), dry_run=False, actor="test")
    data = load_operation(empty_catalog, "cross-entropy")
    flagged = next(r for r in data.runs if r.median_ns == 1)
    assert not flagged.eligible and [r.code for r in flagged.eligibility.reasons] == ["UNDER_PHYSICAL_FLOOR"]
    page = operation_page(empty_catalog, "cross-entropy", now=datetime(2026, 11, 29, tzinfo=UTC))
    assert [r.median_ns for r in page.ranked] and 1 not in [r.median_ns for r in page.ranked]
