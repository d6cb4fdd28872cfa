"""The models pages (issue 49): ``/models`` lists the shipped model definitions; ``/models/{slug}`` maps one
step of a model (phase, batch, sequence or context, tensor-parallel degree) on one GPU to every kernel call,
each looked up in the catalog, and sums the step: the figures measured on that GPU × their counts, the floor of
every call, the biggest gaps first. The page lays out the step ``readmodel.model_steps`` planned and summed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.domain.architectures import ModelDefinition
from kernelindex.readmodel.errors import BadParameter, NotFound
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.model_calls import CallAnswer
from kernelindex.readmodel.model_steps import STEP_PHASES, StepSummary, plan_step, step_of


@dataclass
class ModelPage(JsonModel):
    model: dict[str, Any]
    step: dict[str, Any]
    gpu: dict[str, Any]
    calls: list[CallAnswer]
    summary: StepSummary
    gaps: list[dict[str, Any]]
    notes: list[str]
    cli: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelsIndex(JsonModel):
    models: list[dict[str, Any]]
    note: str


def model_json(model: ModelDefinition) -> dict[str, Any]:
    c = model.config
    return {"slug": model.slug, "title": model.title, "url": urls.model(model.slug), "aliases": list(model.aliases),
            "popular": model.popular, "source": model.source.model_dump(), "license": model.license.model_dump(),
            "config": c.model_dump(exclude_none=True),
            "attention": "multi-head latent attention" if c.mla else "grouped-query attention",
            "experts": c.experts, "top_k": c.num_experts_per_tok}


def models_index(catalog: Any, *, now: datetime) -> ModelsIndex:
    models = [model_json(m) for m in registry.model_definitions().values()]
    return ModelsIndex(models, "Architecture numbers are copied from each model's published config.json, "
                               "named by field; each page maps one step to its kernel calls.")


def model_page(catalog: Any, slug: str, *, now: datetime, gpu: str | None = None, phase: str | None = None,
               batch: str | None = None, seq: str | None = None, tp: str | None = None) -> ModelPage:
    model = registry.model_definitions().get(slug)
    if model is None:
        raise NotFound(f"no model {slug!r}; the models are listed at {urls.MODELS}")
    step = step_of(phase, batch, seq, tp)
    spec = _gpu(gpu)
    plan = plan_step(catalog, model, step, spec, now)
    return ModelPage(
        model=model_json(model),
        step={"phase": step.phase, "batch": step.batch, "seq": step.seq, "tp": step.tp, "dtype": step.dtype,
              "page_size": step.page_size, "tokens": step.tokens, "region": step.region,
              "seq_means": "context length (tokens in the KV cache)" if step.phase == "decode" else "sequence length"},
        gpu={"slug": spec.slug, "label": spec.short, "name": spec.name, "bandwidth_gbps": spec.bandwidth_gbps,
             "url": urls.gpu(spec.slug)},
        calls=plan.calls, summary=plan.summary, gaps=plan.gaps, notes=plan.notes,
        cli=f"ki model {model.slug} --gpu {spec.slug} --{step.phase} --batch {step.batch} "
            f"--{'ctx' if step.phase == 'decode' else 'seq'} {step.seq} --tp {step.tp}",
        options={"phases": list(STEP_PHASES), "gpus": sorted(registry.gpus())},
    )


def _gpu(name: str | None) -> registry.GpuSpec:
    slug = registry.gpu_slug(name) if name else registry.priority_gpus()[0]
    spec = registry.gpus().get(slug or "")
    if spec is None:
        raise BadParameter("gpu", f"{name!r} is not a GPU of the datasheet table (e.g. h100, h200, b200)")
    return spec
