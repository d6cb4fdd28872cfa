"""Environment probe: what the runs ran on, read from the machine (never guessed)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kernelindex.domain.manifests import ExecutionEnvironment, build

LIBRARIES = ("torch", "triton", "transformers", "liger-kernel")
_SMI_FIELDS = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem")


@dataclass
class Probe:
    product: str
    architecture: str
    memory_bytes: int
    software: dict[str, str] = field(default_factory=dict)
    clocks: dict[str, str] = field(default_factory=dict)
    copy_bandwidth_bytes_per_s: float | None = None
    read_bandwidth_bytes_per_s: float | None = None
    write_bandwidth_bytes_per_s: float | None = None
    fp16_gemm_flops_per_s: float | None = None  # runner/cuda.gemm_ceiling
    ceiling_bytes: dict[str, int] | None = None  # per ceiling kernel, the size it was best at (policy/ceilings)
    notes: list[str] = field(default_factory=list)
    # v4: (kernel, bytes, bytes/s) of every ceiling kernel at every size, and the shortest call's stream time
    ceiling_table: list[tuple[str, int, float]] = field(default_factory=list)
    min_call_ns: float | None = None


def nvidia_smi() -> dict[str, str]:
    """Read-only query of driver version and clocks; empty when nvidia-smi is absent."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    query = ",".join(_SMI_FIELDS)
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", str(torch.cuda.current_device())],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip().splitlines()
    except (subprocess.SubprocessError, OSError):
        return {}
    if not out:
        return {}
    values = [v.strip() for v in out[0].split(",")]
    return {k: v for k, v in zip(_SMI_FIELDS, values, strict=False) if v and "N/A" not in v}


def library_versions() -> dict[str, str]:
    found = {}
    for dist in LIBRARIES:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def probe(copy_bandwidth: float | None, read_bandwidth: float | None = None,
          write_bandwidth: float | None = None, gemm_flops: float | None = None,
          ceiling_bytes: dict[str, int] | None = None) -> Probe:
    """Probe the current CUDA device. Call after the copy-bandwidth measurement, so the clocks
    read are the clocks under load."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    smi = nvidia_smi()
    software = {"python": platform.python_version(), **library_versions()}
    if torch.version.cuda:
        software["cuda"] = torch.version.cuda
    if "driver_version" in smi:
        software["driver"] = smi["driver_version"]
    clocks = {}
    for key, name in (("clocks.sm", "sm_mhz_seen"), ("clocks.mem", "mem_mhz_seen"),
                      ("clocks.max.sm", "sm_mhz_max"), ("clocks.max.mem", "mem_mhz_max")):
        if key in smi:
            clocks[name] = smi[key]
    return Probe(
        product=torch.cuda.get_device_name(), architecture=f"sm_{props.major}{props.minor}",
        memory_bytes=int(props.total_memory), software=software, clocks=clocks,
        copy_bandwidth_bytes_per_s=copy_bandwidth,
        read_bandwidth_bytes_per_s=read_bandwidth,
        write_bandwidth_bytes_per_s=write_bandwidth,
        fp16_gemm_flops_per_s=gemm_flops,
        ceiling_bytes=ceiling_bytes,
        notes=[] if smi else ["nvidia-smi not available: driver version and clocks not recorded"],
    )


def environment_manifest(p: Probe) -> ExecutionEnvironment:
    hardware = {"vendor": "NVIDIA", "product": p.product, "architecture": p.architecture,
                "memory_bytes": p.memory_bytes}
    spec = {"hardware": hardware, "software": p.software, "clocks": p.clocks}
    # Rounded to 1 GB/s: finer digits are noise between probes.
    for name in ("copy", "read", "write"):
        value = getattr(p, f"{name}_bandwidth_bytes_per_s")
        if value is not None:
            spec[f"{name}_bandwidth_bytes_per_s"] = float(round(value / 1e9) * 1e9)
    if p.fp16_gemm_flops_per_s is not None:  # rounded to 1 TFLOP/s
        spec["fp16_gemm_flops_per_s"] = float(round(p.fp16_gemm_flops_per_s / 1e12) * 1e12)
    if p.ceiling_bytes:
        spec["ceiling_bytes"] = dict(sorted(p.ceiling_bytes.items()))
    if p.ceiling_table:  # rounded as the single figures are: finer digits are noise between probes
        spec["ceiling_table"] = [{"kernel": k, "bytes": n, "bandwidth_bytes_per_s": float(round(bw / 1e9) * 1e9)}
                                 for k, n, bw in sorted(p.ceiling_table)]
    if p.min_call_ns is not None:
        spec["min_call_ns"] = float(round(p.min_call_ns / 10) * 10)
    title = f"{p.product} · torch {p.software.get('torch', '?')} · CUDA {p.software.get('cuda', '?')}"
    metadata: dict = {"title": title, "labels": {"measured_by": "kernelindex-runner"}}
    if p.notes:
        metadata["description"] = "; ".join(p.notes)
    return build("ExecutionEnvironment", spec, metadata)


PROBE_CACHE = "KI_PROBE_CACHE"


def keep_probe(p: Probe) -> None:
    """Write the probe where ``KI_PROBE_CACHE`` names (a campaign's later processes on the same machine reuse it:
    one GPU, one environment, measured once)."""
    path = os.environ.get(PROBE_CACHE)
    if path:
        Path(path).write_text(json.dumps(dataclasses.asdict(p), indent=1))


def cached_probe() -> Probe | None:
    """The probe an earlier process of this campaign kept, if ``KI_PROBE_CACHE`` names one that exists."""
    path = os.environ.get(PROBE_CACHE)
    if not path or not Path(path).exists():
        return None
    data = json.loads(Path(path).read_text())
    data["ceiling_table"] = [tuple(row) for row in data.get("ceiling_table", [])]
    return Probe(**data)
