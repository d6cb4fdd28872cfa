"""FlashInfer in the campaign engine on the CPU (docs/flashinfer.md): what the trim keeps of the wheel, the build's
checks naming real definitions and adapters, the fi-* steps' dry run walking every FlashInfer case and resuming, and
the device entry the carry writes choosing its steps by the GPU a fake nvidia-smi names. Where a FlashInfer carry
was built here (``ki runner campaign carry --flashinfer`` → .devcarry/flashinfer), its package has the wrappers and
the license, and fi-setup unpacks it once per machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kernelindex.campaigns import flashinfer
from kernelindex.campaigns.drive import Call, run_campaign
from kernelindex.campaigns.ledger import Shipment, read_call, render
from kernelindex.campaigns.steps import StepError, expand, parse, steps_for_gpu

ROOT = Path(__file__).resolve().parents[2]
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
CARRIED = ROOT / ".devcarry" / flashinfer.CARRIED


def test_the_trim_keeps_the_attention_sources_and_headers_and_leaves_the_other_families() -> None:
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
    assert [n for n in kept if not flashinfer.keep(n)] == []
    assert [n for n in left if flashinfer.keep(n)] == []


def test_the_build_checks_name_definitions_and_adapters_the_runner_has() -> None:
    pytest.importorskip("torch")
    from kernelindex.campaigns import flashinfer_build as build
    from kernelindex.runner.ops import operations

    ops = operations()
    for slug, key, axes in build.CHECKS:
        assert key in {a.key for a in ops[slug].adapters()}, (slug, key)
        case = build.small_case(slug, axes)
        assert all(t.shape for t in case.spec.tensors if t.name not in ("sm_scale",))
    head_dims = {int(s.rsplit("-d", 1)[1].split("-")[0]) for s, _, _ in build.CHECKS}
    assert head_dims == set(build.DECODE_HEAD_DIMS) | set(build.PREFILL_HEAD_DIMS)


def test_the_flashinfer_batches_take_their_definitions_and_a_narrower_choice() -> None:
    attention = {"attention": ["gqa-paged-decode-h32-kv8-d128-ps1", "gqa-paged-decode-h32-kv8-d64-ps1",
                               "gqa-ragged-prefill-causal-h32-kv8-d64", "mla-paged-decode-h16"]}
    assert expand("fi-decode", attention) == ["gqa-paged-decode-h32-kv8-d128-ps1,gqa-paged-decode-h32-kv8-d64-ps1:"
                                              "attention:flashinfer-decode,flashinfer-paged-prefill:-flashinfer:300"]
    assert expand("fi-prefill", attention) == ["gqa-ragged-prefill-causal-h32-kv8-d64:attention:"
                                               "flashinfer-ragged-prefill:-flashinfer:300"]
    (narrow,) = expand("fi-decode:gqa-paged-decode-h32-kv8-d64-ps1:flashinfer-decode", attention)
    step = parse(narrow)
    assert (step.operations, step.impl, step.bundle_suffix) == (("gqa-paged-decode-h32-kv8-d64-ps1",),
                                                                "flashinfer-decode", "-v4-flashinfer")
    with pytest.raises(StepError, match="gqa-ragged-prefill-causal-h32-kv8-d64 not in the batch fi-decode"):
        expand("fi-decode:gqa-ragged-prefill-causal-h32-kv8-d64", attention)
    assert (parse("fi-setup").kind, parse("fi-build").kind) == ("fi-setup", "fi-build")


@pytest.fixture(scope="module")
def gemm_cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kernelindex.campaigns.gemm_attn import main as gemm_attention_cases

    folder = tmp_path_factory.mktemp("carry") / "cases-gemm"
    gemm_attention_cases(["--out", str(folder)])
    return folder


def test_a_dry_run_of_the_flashinfer_steps_plans_every_case_and_resumes(gemm_cases: Path, tmp_path: Path) -> None:
    """fi-setup and fi-build print their plans; fi-decode and fi-prefill list each definition's 4 cases with the
    FlashInfer adapters; a second call on the same machine skips them all."""
    pytest.importorskip("torch")
    lines: list[str] = []

    def call() -> Call:
        return Call(budget_s=3000, work=tmp_path / "work", out=tmp_path / "out", gemm_cases=gemm_cases, tag="h100",
                    dry_run=True, flashinfer_home=tmp_path / ".fi", say_to=lines.append)

    assert run_campaign(call(), ["fi-setup", "fi-build", "fi-decode", "fi-prefill"]) == []
    planned = [line.split("] ", 1)[1] for line in lines if "] plan gqa-" in line]
    assert len(planned) == 18 and all("4 cases" in line for line in planned)
    assert sum("flashinfer-decode, flashinfer-paged-prefill" in line for line in planned) == 11
    assert sum("flashinfer-ragged-prefill" in line for line in planned) == 7
    assert all("-v4-flashinfer" in line and "-> h100-gqa-" in line for line in planned)
    assert any("plan fi-setup: unpack flashinfer/flashinfer-0.7.4-trim.tar.xz" in line for line in lines)
    assert any("check flashinfer-ragged-prefill on" in line for line in lines)
    entries = read_call(tmp_path / "out")
    assert [e["step"] for e in entries][:2] == ["fi-setup", "fi-build"] and len(entries) == 2 + 4 + 3
    assert {e["outcome"] for e in entries} == {"done"} and not (tmp_path / ".fi").exists()
    (tmp_path / "out" / "ledger.jsonl").unlink()
    assert run_campaign(call(), ["fi-setup", "fi-build", "fi-decode", "fi-prefill"]) == []
    assert {e["outcome"] for e in read_call(tmp_path / "out")} == {"done earlier"}


def test_the_ledger_keeps_the_build_cost_beside_its_step(tmp_path: Path) -> None:
    step = {"at": "2026-12-07T10:00:00Z", "gpu": H100, "tag": "h100", "step": "fi-build", "rc": 0, "outcome": "done",
            "seconds": 150.2, "bundles": [], "left_s": 400, "dry_run": False, "rehearsal": "",
            "note": "FlashInfer 0.7.4: 5 kernel modules built in 141.6 s on 16 CPUs (0 already built)"}
    ledger = render(Shipment("fi", [(tmp_path, [step])]))
    assert "- call 1, `fi-build`: FlashInfer 0.7.4: 5 kernel modules built in 141.6 s" in ledger
    assert flashinfer.build_note(tmp_path / flashinfer.BUILD_SUMMARY) == ""  # a build cut before its summary


def test_fi_build_without_fi_setup_says_what_to_run_first(tmp_path: Path) -> None:
    lines: list[str] = []
    call = Call(budget_s=300, work=tmp_path / "work", out=tmp_path / "out", flashinfer_home=tmp_path / ".fi",
                say_to=lines.append)
    assert run_campaign(call, ["fi-build"]) == ["fi-build"]
    assert any(f"fi-build: FlashInfer is not unpacked in {tmp_path / '.fi'}: run fi-setup first" in line
               for line in lines)
    assert [(e["step"], e["outcome"], e["rc"]) for e in read_call(tmp_path / "out")] == [("fi-build", "failed", 2)]


def test_the_carry_takes_steps_per_gpu_and_names_a_bad_one() -> None:
    from kernelindex.campaigns.carry import CarryError, parse_steps

    assert parse_steps(["H200=probe  fi-setup fi-decode:gqa-x", "h100=probe gemm-cublas"]) == \
        {"h200": "probe fi-setup fi-decode:gqa-x", "h100": "probe gemm-cublas"}
    with pytest.raises(CarryError, match="--steps h100: step 'rope:x'"):
        parse_steps(["h100=probe rope:x"])
    with pytest.raises(CarryError, match="give TAG=STEPS"):
        parse_steps(["probe softmax"])
    with pytest.raises(CarryError, match="two lines for h200"):
        parse_steps(["h200=probe", "H200=rope"])


def test_the_steps_of_a_call_follow_the_gpu_it_landed_on() -> None:
    lines = ["h200 probe softmax", "h100 probe gemm-cublas fi-setup"]
    assert steps_for_gpu(H100, {}, lines) == ("h100", ["probe", "gemm-cublas", "fi-setup"],
                                              "the steps file's h100 line")
    assert steps_for_gpu(H200, {"H200_STEPS": "probe rope"}, lines) == ("h200", ["probe", "rope"], "H200_STEPS")
    with pytest.raises(StepError, match=r"NVIDIA A100-SXM4-80GB, tag a100\): give them .* A100_STEPS"):
        steps_for_gpu("NVIDIA A100-SXM4-80GB", {}, lines)


def _device_checkout(tmp_path: Path, steps: dict[str, str]) -> Path:
    """A device machine's checkout: the tree's src/ and the carry ``carry`` writes in .devcarry."""
    from kernelindex.campaigns.carry import build
    from kernelindex.campaigns.measure import prepare_from_bundles
    from kernelindex.campaigns.selection import VERIFIED
    from kernelindex.trust.keys import generate

    root = tmp_path / "checkout"
    root.mkdir()
    (root / "src").symlink_to(ROOT / "src")
    generate("entry-test", tmp_path / "keys")
    prepare_from_bundles([VERIFIED / "h200-rope-20261207-v4"], tmp_path / "cases")
    carried = build(root / ".devcarry", {"keys": tmp_path / "keys"}, cases=tmp_path / "cases", download=False,
                    gemm_attention=False, kernelbench=False, steps=steps)
    assert carried["steps"] == steps and float(str(carried["mib"])) < 64
    return root


def _go(root: Path, tmp_path: Path, gpu: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``bash .devcarry/go.sh`` as the device command runs it, with an nvidia-smi that names ``gpu``."""
    fake = tmp_path / "fake-bin"
    fake.mkdir(exist_ok=True)
    (fake / "nvidia-smi").write_text(f"#!/bin/sh\necho '{gpu}'\n")
    (fake / "nvidia-smi").chmod(0o755)
    path = f"{fake}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}"
    return subprocess.run(["bash", ".devcarry/go.sh", *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PATH": path, "KI_DRY_RUN": "1", "KI_SITE": str(tmp_path / "site"),
                               "KI_WORK": str(tmp_path / "work"), "OUT": str(out), **env})


def test_the_carried_entry_runs_the_steps_of_the_gpu_nvidia_smi_names(tmp_path: Path) -> None:
    root = _device_checkout(tmp_path, {"h100": "probe rope:0:1", "h200": "probe rope:0:2"})
    assert (root / ".devcarry" / "steps.txt").read_text() == "h100 probe rope:0:1\nh200 probe rope:0:2\n"
    on_h100 = _go(root, tmp_path, H100, "300")
    assert on_h100.returncode == 0, on_h100.stderr[-2000:]
    assert f"GPU {H100} (tag h100): steps from the steps file's h100 line: probe rope:0:1" in on_h100.stdout
    assert "plan rope: 1 cases" in on_h100.stdout and "-> h100-rope-" in on_h100.stdout
    assert (root / ".devcarry" / "src").resolve() == (ROOT / "src").resolve()
    on_h200 = _go(root, tmp_path, H200, "300", H200_STEPS="probe rope:0:3")
    assert "steps from H200_STEPS: probe rope:0:3" in on_h200.stdout and "plan rope: 3 cases" in on_h200.stdout
    named = _go(root, tmp_path, H200, "300", "rope:0:2")  # steps after the seconds come first
    assert "plan rope: 2 cases" in named.stdout and "steps from" not in named.stdout
    elsewhere = _go(root, tmp_path, "NVIDIA A100-SXM4-80GB", "300")
    assert elsewhere.returncode == 2 and "no steps for this machine's GPU (NVIDIA A100-SXM4-80GB" in elsewhere.stderr
    entries = [json.loads(line) for out in sorted(tmp_path.glob("out-*")) if (out / "ledger.jsonl").exists()
               for line in (out / "ledger.jsonl").read_text().splitlines()]
    assert [(e["tag"], e["step"]) for e in entries] == [("h100", "probe"), ("h100", "rope:0:1"),
                                                        ("h200", "probe"), ("h200", "rope:0:3"),
                                                        ("h200", "rope:0:2")]


def test_the_carried_package_has_the_wrappers_and_its_license() -> None:
    tarball = CARRIED / flashinfer.TRIMMED
    if not tarball.exists():
        pytest.skip("no FlashInfer carry here (ki runner campaign carry --flashinfer builds it)")
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        init = tar.extractfile("flashinfer/__init__.py").read().decode()  # type: ignore[union-attr]
    assert {"flashinfer/decode.py", "flashinfer/prefill.py", "NOTICE-flashinfer.txt",
            "flashinfer_python-0.7.4.dist-info/licenses/LICENSE"} <= names
    assert "BatchDecodeWithPagedKVCacheWrapper" in init and "trimmed by KernelIndex" in init
    assert [p.name for p in (CARRIED / "whl").glob("*.whl")] == [flashinfer.TVM_FFI]


def test_fi_setup_unpacks_the_carry_once_per_machine(tmp_path: Path) -> None:
    """The package unpacked and tvm-ffi installed beside it, once per carry; where this Python is not the GPU
    machine's 3.12, pip refuses the cp312 wheel and the step fails saying so, marking nothing done."""
    if not (CARRIED / flashinfer.TRIMMED).exists():
        pytest.skip("no FlashInfer carry here (ki runner campaign carry --flashinfer builds it)")
    said: list[str] = []
    home = tmp_path / ".fi"
    rc = flashinfer.setup(CARRIED, home, said.append)
    assert (home / "site" / "flashinfer" / "decode.py").is_file()
    assert (home / "site" / "NOTICE-flashinfer.txt").is_file()
    if sys.version_info[:2] != (3, 12):
        assert rc == 1 and not flashinfer.is_set_up(home)
        assert said[-1].startswith(f"fi-setup: pip could not install {CARRIED / 'whl' / flashinfer.TVM_FFI}")
        return
    assert flashinfer.is_set_up(home) and (home / "site" / "tvm_ffi").is_dir()
    assert any(line.startswith("fi-setup: unpacked") for line in said)
    said.clear()
    assert flashinfer.setup(CARRIED, home, said.append) == 0
    assert said == [f"fi-setup: {home / 'site'} already holds this carry "
                    f"({next((home / 'site').glob('.carried-*')).name})"]
    assert flashinfer.env(home)["PYTHONPATH"].startswith(str(home / "site"))


def test_the_flashinfer_carry_checks_the_pins_and_reuses_the_trimmed_package(tmp_path: Path) -> None:
    cache = ROOT / ".ficache"
    made = cache / f"{flashinfer.TRIMMED}.{flashinfer._trim_key()}"
    if not made.is_file():
        pytest.skip("no trimmed package in .ficache (ki runner campaign carry --flashinfer makes it, ~5 min)")
    carried = flashinfer.carry(tmp_path, cache)
    assert (carried["flashinfer_files"], carried["flashinfer_kernels"]) == (4466, False)
    assert (tmp_path / flashinfer.CARRIED / flashinfer.TRIMMED).read_bytes() == made.read_bytes()
    assert sorted(p.name for p in (tmp_path / flashinfer.CARRIED).rglob("*") if p.is_file()) == \
        sorted([flashinfer.TRIMMED, flashinfer.TVM_FFI])
    with pytest.raises(flashinfer.FlashInferCarryError, match="no .*nothing.tar.xz: give the"):
        flashinfer.carry(tmp_path / "again", cache, kernels=tmp_path / "nothing.tar.xz")
