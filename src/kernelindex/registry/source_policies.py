"""The source policy (registry/sources.yaml): whether and how each source's rows may be published."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from kernelindex.registry.documents import RegistryError, load_yaml

DECISIONS = ("publish", "publish_with_attribution", "refuse")


@dataclass(frozen=True)
class SourcePolicy:
    """Whether and how a source's rows may be published (registry/sources.yaml)."""

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


def _source_policy(entry: dict[str, Any]) -> SourcePolicy:
    where = f"registry/sources.yaml: source {entry.get('name')!r}"
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
def source_policies() -> dict[str, SourcePolicy]:
    """source name → policy, in registry order."""
    found: dict[str, SourcePolicy] = {}
    for entry in load_yaml("sources.yaml")["sources"]:
        policy = _source_policy(entry)
        if policy.name in found:
            raise RegistryError(f"registry/sources.yaml: source {policy.name!r} listed twice")
        found[policy.name] = policy
    return found


def source_policy(name: str) -> SourcePolicy | None:
    return source_policies().get(name)


def refused_sources() -> dict[str, str]:
    """Refused source name → the reason (what the publication transaction is given)."""
    return {name: p.reason for name, p in source_policies().items() if p.refused}
