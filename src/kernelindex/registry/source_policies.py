"""The source policy: whether and how each source's rows may be published. Each registered source package
holds the policy of the names its runs carry in its own ``policy.yaml`` (``kernelindex/sources/<package>/``);
``registry/sources.yaml`` lists the registered packages, in import order, and the policy of the runs no package
imports (the runners' own bundles). The files are read as documents: the registry imports no source's code."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from kernelindex.registry.documents import RegistryError, load_yaml, parse_yaml

SOURCES = resources.files("kernelindex").joinpath("sources")  # the source packages' folder

DECISIONS = ("publish", "publish_with_attribution", "refuse")


@dataclass(frozen=True)
class SourcePolicy:
    """Whether and how a source's rows may be published (its package's policy.yaml)."""

    name: str
    title: str
    url: str
    kind: str
    license: str
    license_name: str
    license_url: str
    attribution: str
    decision: str
    reason: str
    # Per file of a source that ships several: file name → the attribution of the rows from that file
    # (its upstream commit). A run names its file in its external id ("FILE:…"); one naming none
    # came from the first file listed.
    files: tuple[tuple[str, str], ...] = ()

    @property
    def refused(self) -> bool:
        return self.decision == "refuse"

    def file_attribution(self, external_id: str) -> str:
        """The attribution of the file a run came from (the source's sentence when it lists no files)."""
        if not self.files:
            return self.attribution
        return next((text for name, text in self.files if external_id.startswith(f"{name}:")), self.files[0][1])

    def file_url(self, external_id: str) -> str:
        """The link to the file a run came from: the source's URL names its first file, so a run of a sibling
        file (Liger's B200 cuTile and CuTe-DSL files) links its own file beside it, never the first one."""
        first = self.files[0][0] if self.files else None
        name = next((name for name, _ in self.files if external_id.startswith(f"{name}:")), None)
        if first is None or name is None or not self.url.endswith(f"/{first}"):
            return self.url
        return self.url.removesuffix(first) + name

    def to_json(self) -> dict[str, str]:
        return {
            "name": self.name, "title": self.title, "url": self.url, "kind": self.kind,
            "license": self.license, "license_name": self.license_name, "license_url": self.license_url,
            "attribution": self.attribution, "decision": self.decision, "reason": self.reason,
        }


def _source_policy(entry: dict[str, Any], document: str) -> SourcePolicy:
    where = f"{document}: source {entry.get('name')!r}"
    fields = set(SourcePolicy.__dataclass_fields__)
    if missing := sorted(fields - set(entry) - {"files"}):
        raise RegistryError(f"{where} lacks {', '.join(missing)}")
    if unknown := sorted(set(entry) - fields):
        raise RegistryError(f"{where} has unknown field(s) {', '.join(unknown)}")
    if entry["decision"] not in DECISIONS:
        raise RegistryError(f"{where}: decision {entry['decision']!r} is not one of {', '.join(DECISIONS)}")
    if entry["decision"] == "refuse" and not str(entry["reason"]).strip():
        raise RegistryError(f"{where}: a refused source needs its reason")
    if not (entry["license"].startswith("LicenseRef-") or entry["license"][:1].isalnum()):
        raise RegistryError(f"{where}: license must be an SPDX identifier or a LicenseRef-…")
    files = tuple((str(name), str(text)) for name, text in (entry.get("files") or {}).items())
    return SourcePolicy(**{k: str(v) for k, v in entry.items() if k != "files"}, files=files)


@cache
def registered_sources() -> tuple[str, ...]:
    """The registered source packages (folders of ``kernelindex/sources/``), in the start-up's import order."""
    return tuple(str(name) for name in load_yaml("sources.yaml")["registered"])


def policy_document(package: str) -> str:
    """Where a registered package's policy is, as messages name it."""
    return f"sources/{package}/policy.yaml"


@cache
def source_policies() -> dict[str, SourcePolicy]:
    """source name → policy: each registered package's, in import order, then the runners' own."""
    documents = [(policy_document(package), parse_yaml(SOURCES.joinpath(package, "policy.yaml").read_text(
        encoding="utf-8"))) for package in registered_sources()]
    documents.append(("registry/sources.yaml", load_yaml("sources.yaml")))
    found: dict[str, SourcePolicy] = {}
    for document, content in documents:
        for entry in content["sources"]:
            policy = _source_policy(entry, document)
            if policy.name in found:
                raise RegistryError(f"{document}: source {policy.name!r} has a policy elsewhere already")
            found[policy.name] = policy
    return found


def source_policy(name: str) -> SourcePolicy | None:
    return source_policies().get(name)


def refused_sources() -> dict[str, str]:
    """Refused source name → the reason (what the publication transaction is given)."""
    return {name: p.reason for name, p in source_policies().items() if p.refused}
