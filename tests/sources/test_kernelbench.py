"""KernelBench importer on a small fixture: two problem-set versions (one problem's shapes changed,
one problem's semantics changed), a null entry, an entry without hardware, a level-4 entry, and a
file whose level times are impossible for its paired shapes."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.sources.base import FileTransport
from kernelindex.sources.kernelbench import import_kernelbench, map_kernelbench
from kernelindex.sources.kernelbench.importer import SUSPECT
from kernelindex.sources.kernelbench.mapping import NOT_STAGED
from kernelindex.sources.kernelbench.problem_file import problem_of
from kernelindex.sources.kernelbench.read import KernelBenchData, ProblemSet, TimingFile, write_kernelbench
from kernelindex.sources.kernelbench.runs import NO_HARDWARE

MATMUL = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """C = A * B"""
    def forward(self, A, B):
        return torch.matmul(A, B)

N = {n}

def get_inputs():
    return [torch.{draw}(N, N), torch.{draw}(N, N)]

def get_init_inputs():
    return []
'''
SCALE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * {factor}

dim = 1024

def get_inputs():
    return [torch.rand(dim)]

def get_init_inputs():
    return []
'''
H100 = "NVIDIA H100 80GB HBM3"


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _counted(sources: list[str]) -> dict[str, dict[str, Any]]:
    """What scripts/derive-kernelbench-floors would count, written by hand for the fixture's files."""
    table = {}
    for source in sources:
        problem = problem_of("level1/1_M.py" if "matmul" in source else "level2/1_S.py", source)
        if "matmul" in source:
            n = problem.axes["n"]
            square = {"dtype": "fp32", "shape": [n, n]}
            table[problem.digest] = {"inputs": [{"name": "A", **square}, {"name": "B", **square}], "parameters": [],
                                     "outputs": [{"name": "output", **square}], "flops": 2 * n ** 3, "scalars": {}}
        else:
            vector = {"dtype": "fp32", "shape": [1024]}
            table[problem.digest] = {"inputs": [{"name": "x", **vector}], "parameters": [],
                                     "outputs": [{"name": "output", **vector}], "flops": 0, "scalars": {}}
    return table


def _timing(file: str, problems: str, content: dict) -> TimingFile:
    date = "2026-01-14" if problems == "problems/new" else "2025-06-01"
    return TimingFile(file, f"results/timing/{file.replace('__', '/')}", "c" * 40, date, problems, "0" * 64, content)


def _entry(mean_ms: float, hardware: str | None = H100) -> dict:
    entry = {"mean": mean_ms, "std": 0.01, "min": mean_ms * 0.9, "max": mean_ms * 1.2, "num_trials": 100}
    return {**entry, "hardware": hardware, "device": "cuda:0"} if hardware else entry


@pytest.fixture
def fixture() -> tuple[KernelBenchData, dict]:
    old = {"level1/1_Square_matmul.py": MATMUL.format(n=4096, draw="randn"),
           "level2/1_Scale.py": SCALE.format(factor=2.0)}
    new = {"level1/1_Square_matmul.py": MATMUL.format(n=8192, draw="rand"),
           "level2/1_Scale.py": SCALE.format(factor=3.0)}
    data = KernelBenchData()
    for tree, files in (("problems/old", old), ("problems/new", new)):
        data.problems.update({_digest(s): s for s in files.values()})
        data.sets[tree] = ProblemSet(tree, tree[-3:] * 8, {f: _digest(s) for f, s in files.items()})
    data.timings = [
        _timing("H100_a__baseline_time_torch.json", "problems/old", {
            "level1": {"1_Square_matmul.py": _entry(2.5)},
            "level2": {"1_Scale.py": None},
            "level4": {"1_Model.py": _entry(9.0)},
        }),
        _timing("H100_b__baseline_time_torch_compile_inductor_default.json", "problems/new", {
            "level1": {"1_Square_matmul.py": _entry(19.0)},
            "level2": {"1_Scale.py": _entry(0.01, hardware=None)},
        }),
        # 8192³ matmul in 0.05 ms is far below its floor on an H100: timed on other shapes.
        _timing("H100_c__baseline_time_torch.json", "problems/new", {
            "level1": {"1_Square_matmul.py": _entry(0.05)},
        }),
    ]
    return data, _counted(list(data.problems.values()))


def test_every_entry_is_accounted_for(fixture: tuple[KernelBenchData, dict]) -> None:
    data, counted = fixture
    mapped = map_kernelbench(data, counted)
    assert mapped.entries == 6
    assert (mapped.timed, mapped.failed) == (2, 1)
    assert mapped.refused == {NO_HARDWARE: 1, NOT_STAGED: 1, SUSPECT: 1}
    assert mapped.timed + mapped.failed + sum(mapped.refused.values()) == mapped.entries
    assert list(mapped.suspect) == ["H100_c__baseline_time_torch.json level1"]
    assert "below the floor" in mapped.suspect["H100_c__baseline_time_torch.json level1"]


def test_changed_shapes_are_two_workloads_and_changed_semantics_two_operations(
    fixture: tuple[KernelBenchData, dict],
) -> None:
    data, counted = fixture
    mapped = map_kernelbench(data, counted)
    ops = {m.metadata.name: m for m in mapped.manifests if m.kind == "OperationSpec"}
    workloads = [m for m in mapped.manifests if m.kind == "WorkloadCase"]
    matmuls = [w for w in workloads if w.spec.axes.get("n")]
    assert sorted(w.spec.axes["n"] for w in matmuls) == [4096, 8192]
    assert len({w.spec.operation for w in matmuls}) == 1  # one operation: only N and the draw changed
    # x * 2 and x * 3 under one name are two operations, never merged; the newest set's keeps the plain slug.
    scale = sorted(name for name in ops if name.startswith("kernelbench-2-1-scale"))
    assert len(scale) == 2 and "kernelbench-2-1-scale" in scale
    assert ops["kernelbench-2-1-scale"].spec.semantics == data.problems[data.sets["problems/new"].files[
        "level2/1_Scale.py"]]
    matmul = ops["kernelbench-1-1-square-matmul"]
    assert matmul.spec.family == "gemm" and "kernelbench 1/1" in matmul.metadata.aliases


def test_published_runs_failed_and_timed(fixture: tuple[KernelBenchData, dict], empty_catalog: Catalog,
                                         tmp_path: Path) -> None:
    data, counted = fixture
    path = tmp_path / "kb.jsonl.zst"
    path.write_bytes(write_kernelbench(data))
    report = import_kernelbench(empty_catalog, FileTransport(path), dry_run=False, actor="test", counted=counted)
    assert report.new["BenchmarkRun"] == 3
    with empty_catalog.engine.connect() as conn:
        statuses = sorted(conn.execute(select(RunRow.status)).scalars())
        sources = conn.execute(select(ObjectRow.body).where(ObjectRow.kind == "Source")).scalars().all()
    assert statuses == ["passed", "passed", "runtime_error"]
    assert any("Permission is hereby granted" in body for body in sources)  # the MIT notice travels
    again = import_kernelbench(empty_catalog, FileTransport(path), dry_run=False, actor="test", counted=counted)
    assert again.new.get("BenchmarkRun", 0) == 0
