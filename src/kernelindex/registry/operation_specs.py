"""The operation specs of registry/operations/, one manifest per file, by slug."""

from __future__ import annotations

from functools import cache
from importlib.resources.abc import Traversable

from kernelindex.domain.manifests import ManifestError, OperationSpec, as_kind, digest_of, parse_manifest
from kernelindex.registry.documents import ROOT, RegistryError, parse_yaml


@cache
def operations() -> dict[str, OperationSpec]:
    """slug → OperationSpec manifest, for every file in registry/operations/."""
    found: dict[str, OperationSpec] = {}
    for entry in sorted(ROOT.joinpath("operations").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            manifest = _parse(entry)
            found[str(manifest.metadata.name)] = manifest
    return found


@cache
def curated_operation(slug: str) -> OperationSpec | None:
    """The registry's spec of one operation, parsing its file alone (the 70 files take a few hundred ms
    to parse, which one ``ki show`` need not pay); None when the registry has none by that slug."""
    entry = ROOT.joinpath("operations", f"{slug}.yaml")
    if not slug or "/" in slug or slug.startswith(".") or not entry.is_file():
        return None
    return _parse(entry)


def _parse(entry: Traversable) -> OperationSpec:
    try:
        document = f"registry/operations/{entry.name}"
        manifest = as_kind(parse_manifest(parse_yaml(entry.read_text(encoding="utf-8")), document), OperationSpec)
    except ManifestError as exc:
        raise RegistryError(str(exc)) from None
    slug = manifest.metadata.name
    if slug is None or slug != entry.name.removesuffix(".yaml"):
        raise RegistryError(f"registry/operations/{entry.name}: metadata.name {slug!r} must match the file name")
    return manifest


def load_operation(slug: str) -> OperationSpec:
    try:
        return operations()[slug]
    except KeyError:
        raise RegistryError(
            f"no operation {slug!r} in the registry; known: {', '.join(sorted(operations()))}"
        ) from None


@cache
def operation_digests() -> dict[str, str]:
    return {slug: digest_of(m) for slug, m in operations().items()}
