"""The folder a device call carries to the GPU machine (at most 64 MiB): the cp312 wheels of what the runner
imports that the machine lacks (it has torch, triton, numpy … but not pydantic, SQLAlchemy or cryptography, and no
network), the runner keys, and the case lists of the campaign's steps. The repository's own ``src/`` and ``bench/``
travel with the working tree; the device command links them into the carried folder (docs/campaigns.md).

    carry/whl/*.whl                 installed with pip --no-index into /tmp/site
    carry/keys/runner.{key,pub}     the default key; carry/keys-TAG/ the key of GPU TAG (h100, …) when given
    carry/cases/                    cases.jsonl + regions.json: a plan's cases, or every shipped runner bundle's
    carry/cases-gemm/               the GEMM & attention cases and their selections (gemm.json, attention.json …)
    carry/kernelbench-cases.json    KernelBench's problems
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from kernelindex.campaigns.selection import VERIFIED

LIMIT_BYTES = 64 << 20
# Pinned to what the runner last ran with on the machine's Python 3.12; orjson since campaign v8.
WHEELS = ("pydantic==2.14.4", "pydantic-core==2.50.5", "annotated-types", "typing-inspection==0.4.5",
          "rfc8785==0.1.4", "cryptography==50.0.2", "cffi", "pycparser", "liger-kernel==0.8.5", "alembic",
          "SQLAlchemy", "greenlet", "Mako", "platformdirs", "orjson")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64")


class CarryError(ValueError):
    """The carry cannot be built as asked; the message says what to do."""


def parse_keys(given: list[str]) -> dict[str, Path]:
    """``DIR`` (the default key, ``keys/``) or ``TAG=DIR`` (``keys-TAG/``) → folder name → key directory."""
    found: dict[str, Path] = {}
    for word in given:
        tag, _, folder = word.rpartition("=")
        name = f"keys-{tag}" if tag else "keys"
        path = Path(folder)
        if not (path / "runner.key").is_file() or not (path / "runner.pub").is_file():
            raise CarryError(f"no runner.key/runner.pub in {path} (ki runner keygen --out {path} --name …)")
        if name in found:
            raise CarryError(f"two keys for {name}/: give one default key and at most one per GPU tag")
        found[name] = path
    if "keys" not in found:
        raise CarryError("no default key: give --key DIR (and --key TAG=DIR for a GPU with its own key)")
    return found


def download_wheels(out: Path) -> int:
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
               "3.12", "--implementation", "cp", *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(out),
               *WHEELS]
    subprocess.run(command, check=True)
    found = len(list(out.glob("*.whl")))
    if found != len(WHEELS):
        raise CarryError(f"expected {len(WHEELS)} wheels in {out}, got {found}: a pin no longer resolves")
    return found


def shipped_runner_bundles(verified: Path = VERIFIED) -> list[Path]:
    """Every shipped bundle of this project's runners (the independent check's are another party's)."""
    return [p for p in sorted(verified.iterdir()) if (p / "manifests.jsonl").is_file() and "independent" not in p.name]


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def build(out: Path, keys: dict[str, Path], *, cases: Path | None = None, wheels: Path | None = None,
          download: bool = True, gemm_attention: bool = True, kernelbench: bool = True) -> dict[str, object]:
    """Write the carry to ``out`` (replaced). ``cases``: a plan's case folder (default: every shipped runner
    bundle's cases); ``wheels``: an earlier carry's wheel folder instead of downloading."""
    from kernelindex.campaigns.measure import prepare_from_bundles

    shutil.rmtree(out, ignore_errors=True)
    (out / "whl").mkdir(parents=True)
    if wheels is not None:
        for wheel in sorted(wheels.glob("*.whl")):
            shutil.copy(wheel, out / "whl")
    elif download:
        download_wheels(out / "whl")
    for name, folder in keys.items():
        (out / name).mkdir()
        for file in ("runner.key", "runner.pub"):
            shutil.copy(folder / file, out / name / file)
    if cases is not None:
        shutil.copytree(cases, out / "cases")
        counts = {"cases": sum(1 for line in (out / "cases" / "cases.jsonl").read_bytes().splitlines() if line)}
    else:
        counts = prepare_from_bundles(shipped_runner_bundles(), out / "cases")
    if gemm_attention:
        from kernelindex.campaigns.gemm_attn import main as gemm_attention_cases

        gemm_attention_cases(["--out", str(out / "cases-gemm")])
    if kernelbench:
        from kernelindex.campaigns.kernelbench import prepare

        prepare(out / "kernelbench-cases.json")
    size = size_of(out)
    if size > LIMIT_BYTES:
        raise CarryError(f"{out} holds {size / 2**20:.1f} MiB, over the device's {LIMIT_BYTES >> 20} MiB carry")
    return {"folder": str(out), "mib": round(size / 2**20, 1), "wheels": len(list((out / "whl").glob("*.whl"))),
            "keys": sorted(keys), **counts}
