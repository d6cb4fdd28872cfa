"""The FlashInfer carry and device scripts on the CPU (docs/flashinfer.md): what the trim keeps of the wheel, the build
script's checks naming real definitions and adapters, and the device script's dry run walking every FlashInfer case
without CUDA. Where the carry was built (bench/flashinfer_carry.sh → .ficarry), its package imports with a stub-free
path: the wrappers are there and the version is 0.7.4."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_trim_keeps_the_attention_sources_and_headers_and_leaves_the_other_families() -> None:
    keep = _bench("flashinfer_trim").keep
    kept = ["flashinfer/decode.py", "flashinfer/prefill.py", "flashinfer/jit/attention/modules.py",
            "flashinfer/data/csrc/batch_decode.cu", "flashinfer/data/csrc/batch_prefill_sm90.cu",
            "flashinfer/data/include/flashinfer/attention/decode.cuh",
            "flashinfer/data/cutlass/include/cute/tensor.hpp",
            "flashinfer/data/cccl/libcudacxx/include/cuda/std/type_traits",
            "flashinfer/data/spdlog/include/spdlog/spdlog.h",
            "flashinfer_python-0.7.4.dist-info/licenses/LICENSE", "flashinfer_python-0.7.4.dist-info/METADATA"]
    left = ["flashinfer/__init__.py",  # replaced by the trimmed one
            "flashinfer/fused_moe/core.py", "flashinfer/experimental/cake/x.py",
            "flashinfer/data/csrc/cake_fmha/kernel.cu", "flashinfer/data/cutlass/examples/a.cu",
            "flashinfer_python-0.7.4.dist-info/RECORD", "flashinfer/data/"]
    assert [n for n in kept if not keep(n)] == []
    assert [n for n in left if keep(n)] == []


def test_the_build_checks_name_definitions_and_adapters_the_runner_has() -> None:
    pytest.importorskip("torch")
    from kernelindex.runner.ops import operations

    build, ops = _bench("flashinfer_build"), operations()
    for slug, key, axes in build.CHECKS:
        assert key in {a.key for a in ops[slug].adapters()}, (slug, key)
        case = build.small_case(slug, axes)
        assert all(t.shape for t in case.spec.tensors if t.name not in ("sm_scale",))
    head_dims = {int(s.rsplit("-d", 1)[1].split("-")[0]) for s, _, _ in build.CHECKS}
    assert head_dims == set(build.DECODE_HEAD_DIMS) | set(build.PREFILL_HEAD_DIMS)


def test_the_device_script_walks_every_flashinfer_case_without_cuda(tmp_path: Path) -> None:
    """KI_DRY_RUN=1: setup and build print their plans, the runner steps list each definition's 4 cases."""
    pytest.importorskip("torch")
    run = tmp_path / "carry"
    run.mkdir()
    (run / "src").symlink_to(ROOT / "src")
    (run / "bench").symlink_to(ROOT / "bench")
    made = subprocess.run([sys.executable, "-m", "kernelindex.campaigns.gemm_attn", "--out", "cases-gemm"], cwd=run,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert made.returncode == 0, made.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "KI_DRY_RUN": "1", "KI_WORK": str(tmp_path / "work"),
           "OUT": str(tmp_path / "out"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "bench/flashinfer_gpu.sh", "900", "setup", "build", "fi-decode", "fi-prefill"],
                          cwd=run, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    planned = [line for line in done.stdout.splitlines() if line.startswith("plan gqa-")]
    assert len(planned) == 18 and all("4 cases" in line for line in planned)
    assert sum("flashinfer-decode, flashinfer-paged-prefill" in line for line in planned) == 11
    assert sum("flashinfer-ragged-prefill" in line for line in planned) == 7
    assert "plan setup" in done.stdout and "check flashinfer-ragged-prefill on" in done.stdout


def test_the_carried_package_has_the_wrappers_and_its_license() -> None:
    tarball = ROOT / ".ficarry" / "flashinfer-0.7.4-trim.tar.xz"
    if not tarball.exists():
        pytest.skip("no carry here (bash bench/flashinfer_carry.sh builds it)")
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        init = tar.extractfile("flashinfer/__init__.py").read().decode()  # type: ignore[union-attr]
    assert {"flashinfer/decode.py", "flashinfer/prefill.py", "NOTICE-flashinfer.txt",
            "flashinfer_python-0.7.4.dist-info/licenses/LICENSE"} <= names
    assert "BatchDecodeWithPagedKVCacheWrapper" in init and "trimmed by KernelIndex" in init
