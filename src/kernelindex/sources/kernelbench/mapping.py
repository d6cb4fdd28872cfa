"""The shipped KernelBench data → manifests: one operation per problem semantics, one workload per
problem file, PyTorch's configurations as implementations, and one run per timing entry — or the
entry's refusal, with its reason. Every entry is accounted for."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from kernelindex import registry
from kernelindex.domain.manifests import Manifest, ManifestError, OperationSpec
from kernelindex.sources.base import source_manifest
from kernelindex.sources.kernelbench.links import reviewed_links
from kernelindex.sources.kernelbench.operations import (
    ProblemNotMapped,
    operation_manifest,
    problem_tensors,
    signature,
    slug_of,
    workload_manifest,
)
from kernelindex.sources.kernelbench.problem_file import ProblemFile, ProblemFileError, problem_of
from kernelindex.sources.kernelbench.read import KernelBenchData, TimingFile, license_text
from kernelindex.sources.kernelbench.runs import (
    NO_HARDWARE,
    SOURCE,
    EntryRefused,
    environment_manifest,
    implementation_manifest,
    protocol_manifest,
    run_manifest,
)

NOT_STAGED = "problem not staged: levels 4 and 5 load Hugging Face models and are left out of the staged copy"
NOT_IN_SET = "problem file not in the paired problem set"
NULL_NO_GPU = ("failed entry (null) in a file whose entries do not name one GPU: its GPU is unknown and never "
               "guessed from the folder")
_LEVEL = re.compile(r"^level(\d+)$")


@dataclass(frozen=True)
class Entry:
    """One timing entry, placed: its file, level key, problem file name and value."""

    timing: TimingFile
    level: str
    problem_file: str
    value: dict[str, Any] | None


@dataclass
class Placed:
    """An entry with its problem and GPU known: a run unless the pairing check refuses it."""

    entry: Entry
    problem: ProblemFile
    hardware: str


@dataclass
class MappedKernelBench:
    manifests: list[Manifest] = field(default_factory=list)
    entries: int = 0
    timed: int = 0
    failed: int = 0
    refused: Counter = field(default_factory=Counter)  # reason → entries
    gpus: Counter = field(default_factory=Counter)  # product → timed runs
    operations: int = 0
    workloads: int = 0
    suspect: dict[str, str] = field(default_factory=dict)  # "file level" → why the pairing is suspect
    problems_not_mapped: dict[str, str] = field(default_factory=dict)  # problem digest → why


def entries_of(timing: TimingFile) -> list[Entry]:
    return [Entry(timing, level, name, value) for level, problems in sorted(timing.content.items())
            for name, value in sorted(problems.items())]


def file_hardware(timing: TimingFile) -> str | None:
    """The one GPU every entry of the file that names one names, else None."""
    named = {v.get("hardware") for problems in timing.content.values() for v in problems.values()
             if isinstance(v, dict) and v.get("hardware")}
    return next(iter(named)) if len(named) == 1 else None


class Mapper:
    """Builds each manifest once (operations by semantics, workloads by file digest)."""

    def __init__(self, data: KernelBenchData, counted: dict[str, dict[str, Any]] | None = None) -> None:
        self.data = data
        self.counted = counted
        self.result = MappedKernelBench()
        self._problems: dict[tuple[str, str], ProblemFile] = {}
        self._built: dict[tuple[str, ...], Manifest] = {}
        self._signatures: dict[str, set[Any]] = defaultdict(set)
        self._slugs = self._operation_slugs()
        self.project = registry.project_manifest("pytorch")
        self.result.manifests += [source_manifest(SOURCE, license_text()), self.project]

    def problem(self, tree: str, file: str) -> ProblemFile:
        """Parsed once per (path, content): most files are identical across the problem sets."""
        key = (file, self.data.sets[tree].files[file])
        if key not in self._problems:
            self._problems[key] = problem_of(file, self.data.problems[key[1]])
        return self._problems[key]

    def _operation_slugs(self) -> dict[str, str]:
        """semantics → slug: a problem with one semantics across the sets keeps the plain slug; where
        they differ, the newest set's keeps it and the others carry their semantics' first digits."""
        newest = max(self.data.timings, key=lambda t: t.commit_date).problems if self.data.timings else None
        by_problem: dict[tuple[int, int], dict[str, tuple[bool, ProblemFile]]] = defaultdict(dict)
        for tree, problem_set in sorted(self.data.sets.items()):
            for file in sorted(problem_set.files):
                try:
                    problem = self.problem(tree, file)
                except ProblemFileError:
                    continue
                known = by_problem[(problem.level, problem.number)].get(problem.semantics)
                by_problem[(problem.level, problem.number)][problem.semantics] = (
                    tree == newest or bool(known and known[0]), problem)
        for tree, problem_set in sorted(self.data.sets.items()):
            for file in sorted(problem_set.files):
                with suppress(ProblemFileError, ProblemNotMapped):
                    problem = self.problem(tree, file)
                    self._signatures[problem.semantics].add(signature(problem_tensors(problem, self.counted)))
        slugs: dict[str, str] = {}
        for variants in by_problem.values():
            plain = next((s for s, (is_newest, _) in variants.items() if is_newest), None) \
                if len(variants) > 1 else next(iter(variants))
            for semantics, (_, problem) in variants.items():
                base = slug_of(problem)
                slugs[semantics] = base if semantics == plain else f"{base[:110]}-v{semantics[:8]}"
        return slugs

    def _shared_tensors(self, problem: ProblemFile) -> dict[str, Any]:
        found = problem_tensors(problem, self.counted)
        if len(self._signatures[problem.semantics]) == 1 or "error" in found:
            return found
        return {**found, "error": "its versions' tensors were not all counted, or differ in structure"}

    def _once(self, key: tuple[str, ...], make: Any) -> Manifest:
        if key not in self._built:
            self._built[key] = make()
            self.result.manifests.append(self._built[key])
            kind = self._built[key].kind
            if kind == "OperationSpec":
                self.result.operations += 1
            elif kind == "WorkloadCase":
                self.result.workloads += 1
        return self._built[key]

    def operation(self, problem: ProblemFile) -> OperationSpec:
        slug = self._slugs[problem.semantics]
        source = self.data.problems[problem.digest]
        built = self._once(("op", problem.semantics), lambda: operation_manifest(
            problem, source, slug, reviewed_links().get(slug, {}), self._shared_tensors(problem)))
        assert isinstance(built, OperationSpec)
        return built

    def refs(self, placed: Placed) -> dict[str, Manifest]:
        problem = placed.problem
        operation = self.operation(problem)
        configuration = placed.entry.timing.configuration
        trials = (placed.entry.value or {}).get("num_trials", 100)
        return {
            "workload": self._once(("wl", problem.digest), lambda: workload_manifest(
                problem, operation, problem_tensors(problem, self.counted))),
            "implementation": self._once(("impl", problem.semantics, configuration), lambda: implementation_manifest(
                operation, configuration, self.project, self._slugs[problem.semantics])),
            "protocol": self._once(("protocol", str(trials)), lambda: protocol_manifest(int(trials))),
            "environment": self._once(("env", placed.hardware), lambda: environment_manifest(placed.hardware)),
        }

    def every_problem(self) -> None:
        """An operation and a workload for every problem of every set, timed or not (searchable)."""
        for tree, problem_set in sorted(self.data.sets.items()):
            for file in sorted(problem_set.files):
                try:
                    problem = self.problem(tree, file)
                    operation = self.operation(problem)
                    self._once(("wl", problem.digest), lambda: workload_manifest(
                        problem, operation, problem_tensors(problem, self.counted)))  # noqa: B023
                except (ProblemFileError, ProblemNotMapped) as exc:
                    self.result.problems_not_mapped[problem_set.files[file]] = str(exc)

    def place(self, entry: Entry) -> Placed:
        """The entry's problem and GPU, or EntryRefused with the reason."""
        timing = entry.timing
        match = _LEVEL.match(entry.level)
        if not match or int(match[1]) > 3:
            raise EntryRefused(NOT_STAGED)
        file = f"{entry.level}/{entry.problem_file}"
        if file not in self.data.sets[timing.problems].files:
            raise EntryRefused(NOT_IN_SET)
        problem = self.problem(timing.problems, file)
        if entry.value is None:
            hardware = file_hardware(timing)
            if hardware is None:
                raise EntryRefused(NULL_NO_GPU)
        else:
            hardware = entry.value.get("hardware") or ""
            if not hardware:
                raise EntryRefused(NO_HARDWARE)
        if registry.gpu_for_product(hardware) is None:
            raise EntryRefused(f"GPU {hardware!r} has no datasheet entry in registry/gpus.yaml")
        return Placed(entry, problem, hardware)

    def add_run(self, placed: Placed) -> None:
        try:
            refs = self.refs(placed)
            entry = placed.entry
            self.result.manifests.append(run_manifest(refs, entry.timing, entry.level, entry.problem_file,
                                                      entry.value))
        except (ProblemNotMapped, EntryRefused, ManifestError) as exc:
            self.result.refused[_reason(exc)] += 1
            return
        if placed.entry.value is None:
            self.result.failed += 1
        else:
            self.result.timed += 1
            self.result.gpus[placed.hardware] += 1


def _reason(exc: Exception) -> str:
    if isinstance(exc, ProblemNotMapped):
        return "problem's tensors not counted (registry/sources/kernelbench/problems.json)"
    return str(exc)
