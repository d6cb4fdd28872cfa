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
    assert report["new"]["BenchmarkRun"] == 3028 and not report["published"]  # the three bundled files
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
