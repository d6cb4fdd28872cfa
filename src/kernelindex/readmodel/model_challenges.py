"""The challenges the model view feeds (issue 49): the calls of popular models' standard steps that have no
figure on a priority GPU — measured only elsewhere, not measured, or without a catalog operation — with the
most step time first (the floor of the call × its count: the least time it takes, an estimate)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex import registry, urls
from kernelindex.domain.units import format_duration
from kernelindex.readmodel.cache import kept
from kernelindex.readmodel.jsonable import JsonModel
from kernelindex.readmodel.pages_models import model_page

UNMEASURED = ("other_gpu", "not_measured", "no_operation")
# the standard step each popular model is asked for: decode, batch 32, context 4096, the TP it needs to fit
STEPS = {"llama-3.1-70b": 4, "deepseek-v3": 8, "mixtral-8x7b": 2, "gpt-oss-120b": 2}
SHOWN = 12


@dataclass
class ModelCallChallenge(JsonModel):
    model: str
    model_title: str
    step: str
    gpu: str
    call: str
    count: int
    shape: str
    status: str
    status_label: str
    operation: str | None
    step_floor_ns: float | None
    step_floor: str
    model_url: str
    ask_url: str | None


def model_call_challenges(catalog: Any, now: datetime) -> list[ModelCallChallenge]:
    """Kept per catalog version and day: six model steps are looked up once, not per challenges page."""
    return kept(catalog, "model-call-challenges", (now.date().isoformat(),), lambda: _compute(catalog, now))


def _compute(catalog: Any, now: datetime) -> list[ModelCallChallenge]:
    gpu = registry.priority_gpus()[0]
    found = []
    for model in registry.model_definitions().values():
        if not model.popular:
            continue
        tp = STEPS.get(model.slug, 1)
        page = model_page(catalog, model.slug, now=now, gpu=gpu, phase="decode", batch="32", seq="4096", tp=str(tp))
        url = urls.model(model.slug, ("gpu", gpu), ("phase", "decode"), ("batch", 32), ("seq", 4096), ("tp", tp))
        for call in page.calls:
            if call.status not in UNMEASURED:
                continue
            found.append(ModelCallChallenge(
                model.slug, model.title, f"decode · batch 32 · context 4096 · TP {tp}", page.gpu["label"], call.name,
                call.count, call.shape_label, call.status, call.status_label,
                call.operation["slug"] if call.operation else None, call.step_floor_ns,
                format_duration(call.step_floor_ns, 2) if call.step_floor_ns is not None else "—", url,
                call.ask_url))
    found.sort(key=lambda c: (c.step_floor_ns is None, -(c.step_floor_ns or 0.0), c.model, c.call))
    return found[:SHOWN]
