"""Extras of a view: data computed from the built page that belongs to the page's data, so the HTML
page and its JSON twin both show it (and the cache keeps it with the page). Each is declared here by name;
what computes it and its type live in views/extra_data.py, imported on first use, so that the view table
loads without the read model (the CLI reads the pages' parameters from it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelindex.views.lazy import Ref, resolved

_DATA = "kernelindex.views.extra_data"


@dataclass(frozen=True)
class Extra:
    """``name``: the key it adds to the page's data; ``computes``: ``f(catalog, data, now)``; ``typed``: its
    type, for the API documentation (each given as itself or as ``module:name``)."""

    name: str
    computes: Ref
    typed: Ref

    @property
    def compute(self) -> Any:
        return resolved(self.computes)

    @property
    def schema(self) -> Any:
        return resolved(self.typed)


USE_BOX = Extra("use", f"{_DATA}:use_box", f"{_DATA}:UseBox")
MODEL_CALLS = Extra("model_calls", f"{_DATA}:model_calls", f"{_DATA}:MODEL_CALLS_TYPE")
