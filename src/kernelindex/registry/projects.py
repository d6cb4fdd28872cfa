"""Software projects and their licenses (registry/projects.yaml), and each source's mapping of its
rows to catalog objects (registry/sources/<name>/)."""

from __future__ import annotations

from functools import cache
from typing import Any

from kernelindex.domain.manifests import SoftwareProject, build
from kernelindex.registry.documents import ROOT, RegistryError, load_yaml, parse_yaml


@cache
def projects() -> dict[str, dict[str, Any]]:
    return load_yaml("projects.yaml")["projects"]


def project_manifest(slug: str) -> SoftwareProject:
    """The catalog's SoftwareProject of a registry project: the same spec, so the same digest, for the runner and
    every source that names it."""
    entry = projects()[slug]
    return build("SoftwareProject", entry["spec"], {"name": slug, "title": entry["title"]})


@cache
def project_licenses() -> dict[str, dict[str, str]]:
    return load_yaml("projects.yaml")["licenses"]


@cache
def source_mapping(name: str) -> dict[str, Any]:
    """Merge every YAML file of registry/sources/<name>/: one ``source`` block, implementations, kernels."""
    merged: dict[str, Any] = {"source": None, "implementations": {}, "kernels": {}, "file_kernels": {}}
    for entry in sorted(ROOT.joinpath("sources", name).iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        data = parse_yaml(entry.read_text(encoding="utf-8")) or {}
        if "source" in data:
            if merged["source"] is not None:
                raise RegistryError(f"registry/sources/{name}/{entry.name}: a second 'source' block")
            merged["source"] = data["source"]
        for section in ("implementations", "kernels"):
            _merge_section(merged[section], data.get(section) or {}, f"registry/sources/{name}/{entry.name}: {section}")
        for file_name, kernels in (data.get("file_kernels") or {}).items():
            where = f"registry/sources/{name}/{entry.name}: file_kernels {file_name}"
            _merge_section(merged["file_kernels"].setdefault(file_name, {}), kernels or {}, where)
    return merged


def _merge_section(into: dict[str, Any], entries: dict[str, Any], where: str) -> None:
    for key, value in entries.items():
        if key in into:
            raise RegistryError(f"{where} {key!r} defined twice")
        into[key] = value
