"""The folder a device call carries to the GPU machine (at most 64 MiB): the cp312 wheels of what the runner
imports that the machine lacks (it has torch, triton, numpy … but not pydantic, SQLAlchemy or cryptography, and no
network), the runner keys, and the case lists of the campaign's steps. The repository's own ``src/``
travels with the working tree; the device command links it into the carried folder (docs/campaigns.md).

    carry/whl/*.whl                 installed with pip --no-index into /tmp/site
    carry/keys/runner.{key,pub}     the default key; carry/keys-TAG/ the key of GPU TAG (h100, …) when given
    carry/cases/                    cases.jsonl + regions.json: a plan's cases, or every shipped runner bundle's;
                                    carry/cases-TAG/ the plan of GPU TAG (h100, …) when given
    carry/cases-gemm/               the GEMM & attention cases and their selections (gemm.json, attention.json …)
    carry/kernelbench-cases.json    KernelBench's problems
    carry/flashinfer/               with ``--flashinfer``: FlashInfer trimmed, tvm-ffi's wheel (campaigns/flashinfer.py)
    carry/steps.txt                 ``TAG STEP…`` lines: the steps of each GPU a call may land on
    carry/go.sh                     the device call's entry (``ENTRY``): install the wheels, choose the steps, run

The device command is always the same line (docs/runner.md): ``bash .devcarry/go.sh SECONDS``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from kernelindex.campaigns import flashinfer
from kernelindex.campaigns.selection import VERIFIED
from kernelindex.campaigns.steps import BATCHES, StepError, parse

LIMIT_BYTES = 64 << 20
# Pinned to what the runner last ran with on the machine's Python 3.12; orjson since campaign v8.
WHEELS = ("pydantic==2.14.4", "pydantic-core==2.50.5", "annotated-types", "typing-inspection==0.4.5",
          "rfc8785==0.1.4", "cryptography==50.0.2", "cffi", "pycparser", "liger-kernel==0.8.5", "alembic",
          "SQLAlchemy", "greenlet", "Mako", "platformdirs", "orjson")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64")


STEPS_FILE = "steps.txt"
ENTRY = "go.sh"
# The entry is the same for every campaign: what changes is in the carry beside it (wheels, cases, steps.txt).
ENTRY_SCRIPT = """#!/usr/bin/env bash
# The device call's entry, written by `ki runner campaign carry` (src/kernelindex/campaigns/carry.py): a new carry
# writes it again, so nothing here is edited by hand. From the repository root of the device machine:
#   bash .devcarry/go.sh SECONDS [STEP...]
# installs the carried wheels (whl/) into $KI_SITE (default /tmp/site), links the working tree's src/,
# and runs the campaign engine (python3 -m kernelindex.campaigns) on STEP..., or when none are given on the steps
# of the GPU nvidia-smi names: $H200_STEPS, $H100_STEPS ... (by the GPU's tag) when set, else the GPU's line of
# steps.txt. Its other variables (OUT, KI_WORK, KI_DRY_RUN, KI_KEY, KI_FI_HOME ...) are the engine's.
set -euo pipefail
cd "$(dirname "$0")"
site=${KI_SITE:-/tmp/site}
ln -sfn ../src src
if compgen -G "whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" whl/*.whl
fi
export PYTHONPATH="$site:$PWD/src" PYTHONUNBUFFERED=1
exec python3 -m kernelindex.campaigns --steps-file steps.txt "$@"
"""


class CarryError(ValueError):
    """The carry cannot be built as asked; the message says what to do."""


def _per_gpu(given: list[str], folder: str, files: tuple[str, str], what: str, fix: str) -> dict[str, Path]:
    """``DIR`` (the default, ``FOLDER/``) or ``TAG=DIR`` (``FOLDER-TAG/``, GPU TAG's own) → folder name → DIR."""
    found: dict[str, Path] = {}
    for word in given:
        tag, _, given_dir = word.rpartition("=")
        name = f"{folder}-{tag}" if tag else folder
        path = Path(given_dir)
        if not all((path / file).is_file() for file in files):
            raise CarryError(f"no {'/'.join(files)} in {path} ({fix.format(path=path)})")
        if name in found:
            raise CarryError(f"two {what}s for {name}/: give one default {what} and at most one per GPU tag")
        found[name] = path
    return found


def parse_keys(given: list[str]) -> dict[str, Path]:
    """``DIR`` (the default key, ``keys/``) or ``TAG=DIR`` (``keys-TAG/``) → folder name → key directory."""
    found = _per_gpu(given, "keys", ("runner.key", "runner.pub"), "key", "ki runner keygen --out {path} --name …")
    if "keys" not in found:
        raise CarryError("no default key: give --key DIR (and --key TAG=DIR for a GPU with its own key)")
    return found


def parse_cases(given: list[str]) -> dict[str, Path]:
    """``DIR`` (the default plan, ``cases/``) or ``TAG=DIR`` (``cases-TAG/``, that GPU's own plan) → folder name →
    plan folder. A GPU without its own plan measures the default's."""
    found = _per_gpu(given, "cases", ("cases.jsonl", "regions.json"), "plan", "ki runner campaign plan … --out {path}")
    if found and "cases" not in found:
        raise CarryError("no default plan: give --cases DIR (and --cases TAG=DIR for a GPU with its own plan)")
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


def parse_steps(given: list[str]) -> dict[str, str]:
    """``TAG=STEP STEP…`` (``h200="probe softmax"``) → GPU tag → its steps; every step must parse (a batch's
    selectors are checked on the machine, where its cases are)."""
    found: dict[str, str] = {}
    for word in given:
        tag, sep, steps = word.partition("=")
        tag = tag.strip().lower()
        if not sep or not tag.isalnum() or not steps.split():
            raise CarryError(f"--steps {word!r}: give TAG=STEPS, e.g. --steps h200=\"probe softmax\" (one per GPU)")
        if tag in found:
            raise CarryError(f"--steps: two lines for {tag}")
        try:
            for step in steps.split():
                if step.split(":")[0] not in BATCHES:
                    parse(step)
        except StepError as exc:
            raise CarryError(f"--steps {tag}: {exc}") from exc
        found[tag] = " ".join(steps.split())
    return found


def tree_bytes(root: Path) -> dict[str, int]:
    """The working tree a call copies (tracked files), all and without ``data/verified``; empty outside git."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True)
    if listed.returncode:
        return {}
    sizes = [(name, (root / name).stat().st_size) for name in listed.stdout.decode().split("\0")
             if name and (root / name).is_file() and not (root / name).is_symlink()]
    verified = str(VERIFIED.relative_to(root)) + "/" if VERIFIED.is_relative_to(root) else "\0"
    return {"tree": sum(s for _, s in sizes), "tree_without_verified": sum(s for n, s in sizes
                                                                          if not n.startswith(verified))}


def build(out: Path, keys: dict[str, Path], *, cases: Path | dict[str, Path] | None = None,
          wheels: Path | None = None, download: bool = True, gemm_attention: bool = True, kernelbench: bool = True,
          steps: dict[str, str] | None = None, flashinfer_cache: Path | None = None,
          flashinfer_kernels: Path | None = None) -> dict[str, object]:
    """Write the carry to ``out`` (replaced). ``cases``: a plan's case folder, or folder name → plan
    (``parse_cases``; default: every shipped runner bundle's cases); ``wheels``: an earlier carry's wheel folder
    instead of downloading; ``steps``: GPU tag → its steps (steps.txt); ``flashinfer_cache``: carry FlashInfer,
    its pinned wheels downloaded into (or found in) this folder; ``flashinfer_kernels``: an earlier fi-build's
    modules for it."""
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
    plans = {"cases": cases} if isinstance(cases, Path) else cases
    if plans:
        counts: dict[str, object] = {}
        for name, folder in sorted(plans.items()):
            shutil.copytree(folder, out / name)
            counts[name.replace("-", "_")] = sum(1 for line in (out / name / "cases.jsonl").read_bytes()
                                                 .splitlines() if line)
    else:
        counts = {**prepare_from_bundles(shipped_runner_bundles(), out / "cases")}
    if gemm_attention:
        from kernelindex.campaigns.gemm_attn import main as gemm_attention_cases

        gemm_attention_cases(["--out", str(out / "cases-gemm")])
    if kernelbench:
        from kernelindex.campaigns.kernelbench import prepare

        prepare(out / "kernelbench-cases.json")
    if flashinfer_cache is not None:
        try:
            counts.update(flashinfer.carry(out, flashinfer_cache, flashinfer_kernels))
        except flashinfer.FlashInferCarryError as exc:
            raise CarryError(str(exc)) from exc
    (out / STEPS_FILE).write_text("".join(f"{tag} {line}\n" for tag, line in sorted((steps or {}).items())))
    (out / ENTRY).write_text(ENTRY_SCRIPT)
    (out / ENTRY).chmod(0o755)
    size = size_of(out)
    if size > LIMIT_BYTES:
        raise CarryError(f"{out} holds {size / 2**20:.1f} MiB, over the device's {LIMIT_BYTES >> 20} MiB carry")
    tree = tree_bytes(Path(__file__).resolve().parents[3])
    call: dict[str, object] = {"call_mib": round((size + tree["tree"]) / 2**20, 1),
                               "call_mib_without_verified": round((size + tree["tree_without_verified"]) / 2**20, 1)
                               } if tree else {}
    if tree and size + tree["tree"] > LIMIT_BYTES:
        call["call_note"] = (f"the carry and the tracked tree exceed {LIMIT_BYTES >> 20} MiB: move "
                             f"{VERIFIED} out of the tree for the call (the runner never reads it)")
    return {"folder": str(out), "mib": round(size / 2**20, 1), "wheels": len(list((out / "whl").glob("*.whl"))),
            "keys": sorted(keys), "steps": steps or {}, **counts, **call}
