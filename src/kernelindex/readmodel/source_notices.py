"""What every surface showing a source's data must carry: its license and attribution.

The registry's source policy is the authority; a Source manifest stored in the catalog (from an
export of another catalog, say) fills in for a source the registry does not list."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from kernelindex import registry
from kernelindex.domain.manifests import Source
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

    def described(self) -> dict[str, Any]:
        """What the notice says of its source besides its name (title, link, license, attribution): the
        fields a page's summary of the source shows beside its own counts."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "name"}


def source_notice(name: str, manifest: Source | None = None, *, external_id: str | None = None) -> SourceNotice:
    """``external_id``: one run's, whose attribution names the file (and commit) it came from."""
    policy = registry.source_policy(name)
    if policy is not None:
        attribution = policy.attribution if external_id is None else policy.file_attribution(external_id)
        url = policy.url if external_id is None else policy.file_url(external_id)
        return SourceNotice(name, policy.title, url, policy.license, policy.license_name,
                            policy.license_url, attribution)
    if manifest is None:
        return SourceNotice(name, name, None, None, None, None, None)
    spec = manifest.spec
    return SourceNotice(name, manifest.metadata.title or name, spec.url, spec.license, None, None, spec.attribution)
