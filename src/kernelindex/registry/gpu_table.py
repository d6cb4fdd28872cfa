"""The GPU datasheet table (registry/gpus.yaml): products, the words that name them, the variants a
source may leave unnamed, the priority order, and devices known only by ISA and compute units."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from kernelindex.domain.gpus import GpuSpec
from kernelindex.registry.documents import RegistryError, load_yaml
from kernelindex.registry.measured_ceilings import measured_ceilings


def _min_call_ns(match: list[str]) -> float | None:
    """The shortest call a runner measured on the product whose reported name is one of ``match`` (the
    runner's environment names the product exactly as the device reports it, so one match name is it)."""
    measured = measured_ceilings()
    found = [measured[m].min_call_ns for m in match if m in measured and measured[m].min_call_ns]
    return found[0] if found else None


@cache
def gpus() -> dict[str, GpuSpec]:
    data = load_yaml("gpus.yaml")
    table = {g["slug"]: GpuSpec(**{**g, "match": tuple(g["match"]), "variant_of": tuple(g.get("variant_of") or ()),
                                   "min_call_ns": _min_call_ns(g["match"])})
             for g in data["gpus"]}
    for gpu in table.values():
        if unknown := [v for v in gpu.variant_of if v not in table or table[v].variant_of]:
            raise RegistryError(f"registry/gpus.yaml: {gpu.slug}: variant_of names no measured product: {unknown}")
    return table


@cache
def priority_gpus() -> tuple[str, ...]:
    return tuple(load_yaml("gpus.yaml")["priority"])


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


@cache
def _devices() -> tuple[dict[str, Any], ...]:
    return tuple(load_yaml("gpus.yaml")["devices"])


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
