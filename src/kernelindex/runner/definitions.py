"""What the runner knows of an operation (``OperationDef``) and of each implementation it calls
(``Adapter``), with the tensor types they pass: the definitions every module of the runner and every
operation module under ``kernelindex.runner.ops`` share. See ``kernelindex.runner.ops`` for what each
field of an operation holds, and ``kernelindex.runner.adapters`` for how adapters are made.

torch is imported for type checking only, so the definitions load without it."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernelindex.domain.manifests import WorkloadCase

if TYPE_CHECKING:
    import torch

Tensors = dict[str, "torch.Tensor"]
Bound = Callable[[], Tensors]  # an implementation's call, bound to one input set
Binder = Callable[[Tensors], Bound]
InputMaker = Callable[[WorkloadCase, "torch.Generator", "torch.device"], Tensors]
Reference = Callable[[Tensors], Tensors]

REGIONS = ("forward", "backward", "forward+backward")
BIND_COMPILE = "bind-compile"  # Adapter.state: the compile the latest bind did
BIND_PLAN = "bind-plan"  # Adapter.state: the plan the latest bind's call runs on
FIRST_COMPILED_CALL = "first-compiled-call-ns"  # Adapter.state: wall time of a torch.compile function's first call


@dataclass(frozen=True)
class CompileRecord:
    """A compile an implementation did ahead of time while binding (XLA's ``lower().compile()``): its wall
    time and what that time covers, in words a run page can show."""

    ns: int
    method: str


@dataclass(frozen=True)
class PlanRecord:
    """Host work an implementation does per batch layout before its calls (FlashInfer's ``plan()``), outside the
    timed call: its wall time and what that time covers, in words a run page can show."""

    ns: int
    method: str


@dataclass(frozen=True)
class OperationDef:
    slug: str
    make_inputs: InputMaker
    reference: Reference
    adapters: Callable[[], list[Adapter]]
    grad_inputs: tuple[str, ...] = ()
    regions: tuple[str, ...] = ("forward",)
    unavailable: str | None = None
    overwrites: tuple[str, ...] = ()
    optional_inputs: tuple[str, ...] = ()
    # Integer inputs whose values pick rows of a table (embedding: input_ids): the run records how many
    # distinct values its timed inputs held, since random ids repeat and the rows actually read are fewer.
    index_inputs: tuple[str, ...] = ()

    def grads_of(self, inputs: Tensors) -> tuple[str, ...]:
        """The gradient inputs of this input set: ``grad_inputs`` less the optional ones it does not carry
        (a required one missing still fails where it is looked up)."""
        return tuple(n for n in self.grad_inputs if n in inputs or n not in self.optional_inputs)


@dataclass
class Adapter:
    key: str  # baseline | liger | torch-compile
    operation: str  # operation slug
    line: str  # implementation line slug (matches the catalog's lines where one exists)
    title: str
    project: str  # registry project slug
    language: str
    module: str
    symbol: str
    packages: tuple[str, ...]  # pip distributions the call needs, the primary one first
    modules: tuple[str, ...]  # modules that must import
    binder: Callable[[Adapter, Tensors], Bound]
    in_place: bool = False
    role: str = "candidate"
    forward_computes_gradient: bool = False  # its forward does the backward's work (ImplementationRevision)
    description: str = ""  # shown on the implementation page (e.g. who wrote a baseline)
    state: dict[str, Any] = field(default_factory=dict)

    def missing(self) -> str | None:
        """Why this adapter cannot run here, or None."""
        for dist in self.packages:
            try:
                importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                return f"{self.title}: package {dist!r} is not installed (pip install {dist})"
        for module in self.modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - report any import failure as unavailability
                return f"{self.title}: cannot import {module} ({type(exc).__name__}: {exc})"
        return None

    def versions(self) -> dict[str, str]:
        return {dist: importlib.metadata.version(dist) for dist in self.packages}

    @property
    def version(self) -> str:
        return importlib.metadata.version(self.packages[0])

    def start_case(self) -> None:
        """Forget per-case state (compiled functions) before a new workload case."""
        self.state.clear()

    def bind(self, inputs: Tensors) -> Bound:
        """The call on these inputs. Autograd mode is the caller's: the timed regions decide it."""
        self.state.pop(BIND_COMPILE, None)
        self.state.pop(BIND_PLAN, None)
        return self.binder(self, inputs)

    def record_compile(self, ns: int, method: str) -> None:
        """Called by a binder that compiled ahead of time: what this bind's compile cost."""
        self.state[BIND_COMPILE] = CompileRecord(ns, method)

    def bind_compile(self) -> CompileRecord | None:
        """The compile the latest ``bind`` did, or None: a bind that reused an earlier compile did none, so a
        compile is never reported twice."""
        record = self.state.get(BIND_COMPILE)
        return record if isinstance(record, CompileRecord) else None

    def record_plan(self, record: PlanRecord) -> None:
        """Called by a binder whose call runs on a plan made outside it: that plan's host cost."""
        self.state[BIND_PLAN] = record

    def bind_plan(self) -> PlanRecord | None:
        """The plan the latest ``bind``'s call runs on, or None."""
        record = self.state.get(BIND_PLAN)
        return record if isinstance(record, PlanRecord) else None


