import json
from pathlib import Path

from typer.testing import CliRunner

from kernelindex.cli import app

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "manifests"


def test_import_requires_a_mode(tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", "liger", "--database", f"sqlite:///{tmp_path / 'c.sqlite'}"])
    assert result.exit_code == 2 and "--dry-run" in result.output


def test_import_dry_run_then_publish_then_export(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    dry = runner.invoke(app, ["import", "liger", "--dry-run", "--json", "--database", db])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.output)
    assert report["new"]["BenchmarkRun"] == 3673 and not report["published"]  # the three bundled files
    assert [f["rows_read"] for f in report["files"]] == [2448, 1284, 165]
    published = runner.invoke(app, ["import", "liger", "--publish", "--database", db])
    assert published.exit_code == 0 and "BenchmarkRun" in published.output
    out = tmp_path / "export.jsonl"
    exported = runner.invoke(app, ["export", "--output", str(out), "--database", db])
    assert exported.exit_code == 0 and out.read_text().count("\n") > 1649


def test_manifest_validate_and_digest() -> None:
    good = sorted((EXAMPLES / "valid").glob("*.json"))
    result = runner.invoke(app, ["manifest", "validate", *map(str, good)])
    assert result.exit_code == 0 and result.output.count("ok") == len(good)
    bad = runner.invoke(app, ["manifest", "validate", str(EXAMPLES / "invalid" / "unknown-field.json")])
    assert bad.exit_code == 1 and "spec.homepag" in bad.output
    digest = runner.invoke(app, ["manifest", "digest", str(EXAMPLES / "valid" / "software-project.json")])
    assert digest.exit_code == 0 and digest.output.startswith("sha256:")


def test_retract_unknown_run_fails_clearly(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    result = runner.invoke(app, ["retract", "0123456789abcdef", "--reason", "x", "--database", db])
    assert result.exit_code == 1 and "matches no run" in result.output


def test_retract_and_supersede_need_a_reason_and_name_an_unknown_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    blank = runner.invoke(app, ["supersede", "0123456789abcdef", "fedcba9876543210", "--reason", " ", "--database", db])
    assert blank.exit_code == 2 and "--reason must say why NEW replaces OLD" in blank.output
    blank = runner.invoke(app, ["retract", "0123456789abcdef", "--reason", "", "--database", db])
    assert blank.exit_code == 2 and "--reason must say why the run is retracted" in blank.output
    unknown = runner.invoke(app, ["supersede", "0123456789abcdef", "fedcba9876543210", "--reason", "x",
                                  "--database", db])
    assert unknown.exit_code == 1 and "matches no run" in unknown.output


def test_import_jsonl_refuses_a_zero_median_naming_line_and_field(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.sqlite'}"
    assert runner.invoke(app, ["import", "liger", "--publish", "--database", db]).exit_code == 0
    out = tmp_path / "export.jsonl"
    assert runner.invoke(app, ["export", "--output", str(out), "--database", db]).exit_code == 0
    lines = out.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if '"kind":"BenchmarkRun"' in line)
    run = json.loads(lines[number - 1])
    run["spec"]["timing"]["median_ns"] = 0
    lines[number - 1] = json.dumps(run)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    other = f"sqlite:///{tmp_path / 'd.sqlite'}"
    result = runner.invoke(app, ["import", "jsonl", str(bad), "--dry-run", "--database", other])
    assert result.exit_code == 1
    assert f"bad.jsonl:{number}" in result.output and "spec.timing.median_ns" in result.output
    assert "Traceback" not in result.output
