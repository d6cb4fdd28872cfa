"""Data shipped with the package: operation specs, the GPU datasheet table, source mappings.

Loading is cached: the registry is read-only at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from kernelindex.domain.gpus import GpuSpec
from kernelindex.domain.manifests import ManifestError, OperationSpec, as_kind, digest_of, parse_manifest

_ROOT = resources.files("kernelindex.registry")


class RegistryError(ValueError):
    pass


def _load_yaml(relative: str) -> Any:
    return yaml.safe_load(_ROOT.joinpath(relative).read_text(encoding="utf-8"))


@cache
def operations() -> dict[str, OperationSpec]:
    """slug → OperationSpec manifest, for every file in registry/operations/."""
    found: dict[str, OperationSpec] = {}
    for entry in sorted(_ROOT.joinpath("operations").iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        try:
            document = f"registry/operations/{entry.name}"
            manifest = as_kind(parse_manifest(yaml.safe_load(entry.read_text(encoding="utf-8")), document),
                               OperationSpec)
        except ManifestError as exc:
            raise RegistryError(str(exc)) from None
        slug = manifest.metadata.name
        if slug is None or slug != entry.name.removesuffix(".yaml"):
            raise RegistryError(f"registry/operations/{entry.name}: metadata.name {slug!r} must match the file name")
        found[slug] = manifest
    return found


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


@cache
def gpus() -> dict[str, GpuSpec]:
    data = _load_yaml("gpus.yaml")
    table = {g["slug"]: GpuSpec(**{**g, "match": tuple(g["match"]), "variant_of": tuple(g.get("variant_of") or ())})
             for g in data["gpus"]}
    for gpu in table.values():
        if unknown := [v for v in gpu.variant_of if v not in table or table[v].variant_of]:
            raise RegistryError(f"registry/gpus.yaml: {gpu.slug}: variant_of names no measured product: {unknown}")
    return table


@cache
def runner_unavailable() -> dict[str, str]:
    """Operations the runner cannot verify → the reason (``runner_coverage.yaml``)."""
    return dict(_load_yaml("runner_coverage.yaml").get("unavailable") or {})


@cache
def runner_pending() -> dict[str, str]:
    """Operations the runner can verify but that have no shipped verified runs yet → why not."""
    return dict(_load_yaml("runner_coverage.yaml").get("pending") or {})


@cache
def forward_computes_gradient() -> dict[str, str]:
    """Implementation lines whose forward also computes the gradient → how, in words (``region_work.yaml``)."""
    return dict(_load_yaml("region_work.yaml").get("forward_computes_gradient") or {})


def why_not_verified(slug: str) -> str | None:
    """The stated reason an operation has no verified runs, when the registry states one."""
    return runner_unavailable().get(slug) or runner_pending().get(slug)


@cache
def priority_gpus() -> tuple[str, ...]:
    return tuple(_load_yaml("gpus.yaml")["priority"])


def _gpu_key(word: str) -> str:
    return re.sub(r"[\s_\-./:+()]+", "", word.strip().lower())


@cache
def gpu_aliases() -> dict[str, str]:
    """The one GPU alias table (normalised word → slug) every command, route and query uses.

    Short labels first, then slugs, names and reported device names, so "h100" is the SXM part."""
    table: dict[str, str] = {}
    for gpu in gpus().values():
        table.setdefault(_gpu_key(gpu.short), gpu.slug)
    for gpu in gpus().values():
        for phrase in (gpu.slug, gpu.name, *gpu.match):
            table.setdefault(_gpu_key(phrase), gpu.slug)
    return table


def gpu_may_be(requested: str, observed: str | None) -> bool:
    """Whether a run on GPU ``observed`` answers a request for ``requested`` (both slugs): the same
    product, or a product the source named without its variant ("NVIDIA H100") that may be the
    requested one — either way round, so "h100" reaches H100 runs whose variant is not recorded,
    and a request on that unrecorded product reaches every variant. Cohorts stay keyed on the
    environment, so such runs never rank with a specific variant's."""
    if observed is None or requested == observed:
        return requested == observed
    table = gpus()
    asked, seen = table.get(requested), table.get(observed)
    return bool(seen and requested in seen.variant_of) or bool(asked and observed in asked.variant_of)


def gpu_slug(word: str) -> str | None:
    """``a100``, ``A100 80GB``, ``NVIDIA A100-SXM4-80GB`` and ``a100-80gb`` all name ``a100-80gb``."""
    return gpu_aliases().get(_gpu_key(word))


def gpus_answering(slug: str) -> tuple[str, ...]:
    """The GPU slugs whose runs answer a request for ``slug`` (``gpu_may_be``): the product itself and
    the products a source named without their variant that may be it."""
    return tuple(g for g in gpus() if gpu_may_be(slug, g))


def gpu_reading(word: str) -> str | None:
    """How a request for GPU ``word`` is read, in words, when more than one product answers it (the
    rule search uses: "H100" is the SXM part, and runs whose variant the source did not record may be
    it, so they are included, labelled). None when ``word`` names exactly one product's runs."""
    slug = gpu_slug(word)
    if slug is None:
        return None
    others = [gpus()[g].name for g in gpus_answering(slug) if g != slug]
    if not others:
        return None
    return (f"{word!r} is read as {gpus()[slug].name} (/gpus/{slug}); runs on {', '.join(others)} may be it, so they "
            f"are included and labelled as such.")


@cache
def gpu_for_product(product: str) -> GpuSpec | None:
    """Map a device name as reported (``NVIDIA A100-SXM4-80GB``) to its datasheet entry."""
    wanted = product.strip().lower()
    for gpu in gpus().values():
        if any(wanted == m.lower() for m in gpu.match):
            return gpu
    return None


@dataclass(frozen=True)
class ModuleConstructor:
    """How a snippet builds one module class (registry/constructors.yaml)."""

    args: tuple[str | int, ...]
    kwargs: dict[str, int]
    forward: tuple[str, ...]


@cache
def module_constructors() -> dict[str, ModuleConstructor]:
    """``module.Symbol`` → its constructor template."""
    found = {}
    for name, entry in _load_yaml("constructors.yaml")["constructors"].items():
        unknown = set(entry) - {"args", "kwargs", "forward"}
        if unknown or not entry.get("forward"):
            raise RegistryError(f"registry/constructors.yaml: {name}: give forward (a list of input names) and "
                                f"optionally args and kwargs; unknown keys {sorted(unknown)}")
        found[name] = ModuleConstructor(tuple(entry.get("args", ())), dict(entry.get("kwargs", {})),
                                        tuple(entry["forward"]))
    return found


@cache
def projects() -> dict[str, dict[str, Any]]:
    return _load_yaml("projects.yaml")["projects"]


@cache
def project_licenses() -> dict[str, dict[str, str]]:
    return _load_yaml("projects.yaml")["licenses"]


@cache
def source_mapping(name: str) -> dict[str, Any]:
    """Merge every YAML file of registry/sources/<name>/: one ``source`` block, implementations, kernels."""
    merged: dict[str, Any] = {"source": None, "implementations": {}, "kernels": {}, "file_kernels": {}}
    for entry in sorted(_ROOT.joinpath("sources", name).iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
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
    for entry in _load_yaml("sources.yaml")["sources"]:
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


@dataclass(frozen=True)
class FlopRule:
    flops: str
    why: str


@cache
def _floor_rules() -> dict[str, Any]:
    return _load_yaml("floors.yaml")


def flop_rule(family: str, slug: str, axes: set[str]) -> FlopRule | None:
    """The standard FLOP count for an imported operation (registry/floors.yaml), or None."""
    rules = _floor_rules()
    candidates = [*(rules["operations"].get(slug) or []), *(rules["families"].get(family) or [])]
    for rule in candidates:
        if set(rule["axes"]) <= axes and rule.get("slug_contains", "") in slug:
            return FlopRule(rule["flops"], rule["why"])
    return None


@cache
def _devices() -> tuple[dict[str, Any], ...]:
    return tuple(_load_yaml("gpus.yaml")["devices"])


@cache
def device_product(isa: str | None, cu: int | None) -> str:
    """The product name a run records for a device known by ISA and compute units only
    (gpus.yaml ``devices``): a datasheet entry's match name when the pair proves the product, else
    a label of what is known, which has no datasheet entry and so no floor."""
    for entry in _devices():
        if entry["isa"] in ("*", isa) and entry["cu"] in ("*", cu):
            if "gpu" in entry:
                return gpus()[entry["gpu"]].match[0]
            return str(entry["label"]).format(isa=isa or "not recorded", cu=cu if cu is not None else "?")
    raise RegistryError(f"registry/gpus.yaml: no devices entry for ISA {isa!r} with {cu!r} CUs")
