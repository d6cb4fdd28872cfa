import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kernelindex.domain.manifests import ManifestError, digest_of, load_manifest_file, parse_manifest_text
from kernelindex.domain.units import format_duration, ms_to_ns, parse_duration_ns

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "manifests"
EXPECTED = yaml.safe_load((EXAMPLES / "invalid" / "EXPECTED.yaml").read_text())


@pytest.mark.parametrize("path", sorted((EXAMPLES / "valid").glob("*.json")), ids=lambda p: p.name)
def test_valid_examples_validate(path: Path) -> None:
    assert digest_of(load_manifest_file(path)).startswith("sha256:")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_invalid_examples_name_document_and_field(name: str) -> None:
    path = EXAMPLES / "invalid" / name
    with pytest.raises(ManifestError) as info:
        load_manifest_file(path)
    assert str(path) in str(info.value)
    assert EXPECTED[name] in str(info.value)


def test_every_invalid_example_has_an_expectation() -> None:
    assert {p.name for p in (EXAMPLES / "invalid").glob("*.json")} == set(EXPECTED)


def test_durations_normalize_to_integer_ns() -> None:
    manifest = load_manifest_file(EXAMPLES / "valid" / "protocol-durations.json")
    assert manifest.spec.warmup.time_ns == 25_000_000
    assert manifest.spec.repetitions.time_ns == 1_500
    assert manifest.spec.quantiles == [0.2, 0.5, 0.8]


def test_instants_normalize_to_utc() -> None:
    manifest = load_manifest_file(EXAMPLES / "valid" / "retraction.json")
    assert manifest.spec.at.isoformat() == "2026-11-29T09:00:00+00:00"


def test_metadata_is_not_identity() -> None:
    base = json.loads((EXAMPLES / "valid" / "software-project.json").read_text())
    edited = {**base, "metadata": {"name": "other", "title": "Renamed"}}
    assert digest_of(parse_manifest_text(json.dumps(base))) == digest_of(parse_manifest_text(json.dumps(edited)))


def test_units() -> None:
    assert ms_to_ns(0.058880001306533813) == 58880
    assert ms_to_ns(0.0000005) == 1  # half rounds away from zero
    assert parse_duration_ns("58.88us") == 58880
    with pytest.raises(ValueError, match="whole number"):
        parse_duration_ns("0.5ns")
    assert format_duration(58880) == "58.9 µs"
    assert format_duration(1_933_264) == "1.93 ms"
    assert format_duration(950) == "950 ns"


PROJECT = {
    "apiVersion": "kernelindex/v1",
    "kind": "SoftwareProject",
    "spec": {"name": "P", "kind": "library", "packages": ["a", "b", "c"], "repository": "https://r"},
}


@given(st.permutations(["a", "b", "c"]), st.booleans(), st.integers(min_value=0, max_value=4))
def test_digest_ignores_key_order_whitespace_and_set_order(packages: list[str], reverse: bool, indent: int) -> None:
    spec = {**PROJECT["spec"], "packages": packages + packages[:1]}
    items = list({**PROJECT, "spec": dict(sorted(spec.items(), reverse=reverse))}.items())
    document = dict(reversed(items) if reverse else items)
    text = json.dumps(document, indent=indent or None)
    assert digest_of(parse_manifest_text(text)) == digest_of(parse_manifest_text(json.dumps(PROJECT)))


def test_digest_changes_with_the_spec() -> None:
    changed = {**PROJECT, "spec": {**PROJECT["spec"], "name": "Q"}}
    assert digest_of(parse_manifest_text(json.dumps(changed))) != digest_of(parse_manifest_text(json.dumps(PROJECT)))
