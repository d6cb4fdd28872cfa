"""Issue 48 item 5: a source is declared once, in its own package, and found from that declaration by the
start-up import, the CLI and the documents; the policy of every name it publishes under is in its own package
(``policy.yaml``), read by the registry from the same list of registered packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelindex import registry
from kernelindex.bootstrap import ALL_PARTS, VERIFIED
from kernelindex.cli.commands import load_command
from kernelindex.registry.documents import load_yaml, parse_yaml
from kernelindex.registry.source_policies import SOURCES
from kernelindex.sources.registry import REGISTERED, declaration, declarations

ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_package_declares_its_source_and_the_start_up_imports_it() -> None:
    found = declarations()
    assert [d.part for d in found] == list(ALL_PARTS[:-1]) and ALL_PARTS[-1] == VERIFIED
    assert len(found) == len(REGISTERED) == len({d.part for d in found})
    assert declaration("aiter").names == ("aiter-tuned-configs",)


def _own_policies(package: str) -> list[str]:
    text = SOURCES.joinpath(package, "policy.yaml").read_text(encoding="utf-8")
    return [entry["name"] for entry in parse_yaml(text)["sources"]]


def test_every_name_a_source_publishes_under_has_its_policy_in_its_own_package() -> None:
    for module, source in zip(REGISTERED, declarations(), strict=True):
        own = _own_policies(module.rsplit(".", 1)[-1])
        for name in source.names:
            assert name in own, f"{source.part}: {name} has no entry in its package's policy.yaml"
            policy = registry.source_policy(name)
            assert policy is not None and policy.attribution and policy.license_name, name


def test_the_policies_are_the_registered_packages_and_the_runners_own() -> None:
    packages = registry.registered_sources()
    assert [f"kernelindex.sources.{p}" for p in packages] == list(REGISTERED)
    runners = [entry["name"] for entry in load_yaml("sources.yaml")["sources"]]
    assert list(registry.source_policies()) == [n for p in packages for n in _own_policies(p)] + runners
    assert {registry.source_policy(n).kind for n in runners} == {"runner"}  # type: ignore[union-attr]


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
