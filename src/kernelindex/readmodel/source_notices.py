"""What every surface showing a source's data must carry: its license and attribution.

The registry's source policy is the authority; a Source manifest stored in the catalog (from an
export of another catalog, say) fills in for a source the registry does not list."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex import registry
from kernelindex.readmodel.jsonable import JsonModel


@dataclass
class SourceNotice(JsonModel):
    name: str
    title: str
    url: str | None
    license: str | None
    license_name: str | None
    license_url: str | None
    attribution: str | None


def source_notice(name: str, manifest: dict | None = None) -> SourceNotice:
    policy = registry.source_policy(name)
    if policy is not None:
        return SourceNotice(name, policy.title, policy.url, policy.license, policy.license_name,
                            policy.license_url, policy.attribution)
    spec = (manifest or {}).get("spec", {})
    title = (manifest or {}).get("metadata", {}).get("title") or name
    return SourceNotice(name, title, spec.get("url"), spec.get("license"), None, None, spec.get("attribution"))
