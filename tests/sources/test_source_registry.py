"""Issue 48 item 5: a source is declared once, in its own package, and found from that declaration by the
start-up import, the CLI and the documents; the policy of every name it publishes under is in the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelindex import registry
from kernelindex.bootstrap import ALL_PARTS, VERIFIED
from kernelindex.cli.commands import load_command
from kernelindex.sources.registry import REGISTERED, declaration, declarations

ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_package_declares_its_source_and_the_start_up_imports_it() -> None:
    found = declarations()
    assert [d.part for d in found] == list(ALL_PARTS[:-1]) and ALL_PARTS[-1] == VERIFIED
    assert len(found) == len(REGISTERED) == len({d.part for d in found})
    assert declaration("aiter").names == ("aiter-tuned-configs",)


def test_every_name_a_source_publishes_under_has_its_policy_and_attribution() -> None:
    for source in declarations():
        for name in source.names:
            policy = registry.source_policy(name)
            assert policy is not None, f"{source.part}: {name} has no entry in registry/sources.yaml"
            assert policy.attribution and policy.license_name, name


def test_every_source_has_its_document_and_its_import_command() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    imports = load_command("import")
    for package, source in zip(REGISTERED, declarations(), strict=True):
        assert (ROOT / source.docs).is_file(), source.docs
        assert f"sources/{package.rsplit('.', 1)[-1]}/" in design, f"docs/design.md §10 does not list {package}"
        assert source.import_command in imports.commands, f"no `ki import {source.import_command}`"


def test_an_unknown_part_names_the_registered_ones() -> None:
    with pytest.raises(KeyError, match="registered: liger, export, aiter, kernelbench"):
        declaration("nosuch")
