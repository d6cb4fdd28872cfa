"""FlashInfer 0.7.4 on the GPU machine (issue 45, docs/flashinfer.md): its part of the carry, and what the campaign
steps ``fi-setup`` and ``fi-build`` do with it there.

The ``flashinfer-python`` wheel is 101 MB (715 MB unpacked) against 64 MiB a call, the repository's tracked files
included. The carry (``ki runner campaign carry --flashinfer``) holds it trimmed to what the batch decode and batch
prefill (paged and ragged) kernels need, as one ``.tar.xz``, and the cp312 wheel of apache-tvm-ffi, the one
dependency the machine lacks for them; both downloads are checked against pinned SHA-256 digests.

What the wrappers need was found by importing ``flashinfer.decode`` and ``flashinfer.prefill`` with the GPU
machine's packages (127 FlashInfer modules, all in the subpackages below) and by reading the JIT generators of the
decode and prefill modules (``jit/attention/modules.py``): the sources they copy from ``data/csrc`` are its
top-level files, and the include paths are ``data/include``, CUTLASS (``data/cutlass/include``,
``tools/util/include``), the vendored CCCL and spdlog (``jit/env.py``). The wheel's ``__init__.py`` imports every
family (MoE, GEMM, communication …) and through them packages the machine lacks; it is replaced by a short one that
imports the decode and prefill modules alone, and says so. Everything else is the wheel's files, unchanged, with its
licenses and a NOTICE.

On the machine, ``fi-setup`` unpacks the carry into ``KI_FI_HOME`` (default ``../.fi`` beside the carried folder:
git-ignored and never carried, so the package and FlashInfer's kernel cache stay on a warm machine between calls),
and ``fi-build`` builds the kernel modules there once per campaign (``campaigns/flashinfer_build.py``).
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path, PurePosixPath

VERSION = "0.7.4"
WHEEL = f"flashinfer_python-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "a051a62e09a2738e8b0de47a1944fd2f0f3eff01b728b662141ea660cb09dd32"
TVM_FFI = "apache_tvm_ffi-0.1.15.post2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
TVM_FFI_SHA256 = "059eed9bfc94bcd41650fb8eefde74040a1bc7e7b1a6f0a8ff897b02b118875b"
CARRIED = "flashinfer"  # the carry's folder: the trimmed package, whl/, and kernels another machine built
TRIMMED = f"flashinfer-{VERSION}-trim.tar.xz"
KERNELS = "flashinfer-kernels-sm90a.tar.xz"  # fi-build's built modules, for the lane's other GPU (both sm_90a)
BUILD_SUMMARY = "flashinfer-build.json"
DIST_INFO = f"flashinfer_python-{VERSION}.dist-info"
# Subpackages the import of flashinfer.decode and flashinfer.prefill reaches (with the GPU machine's packages),
# taken whole; ``triton`` for page.py's lazy import.
PACKAGES = ("autotuner", "cudnn", "cute_dsl", "cutile", "jit", "mla", "quantization", "trace", "triton")
DATA_TREES = ("data/include/", "data/cutlass/include/", "data/cutlass/tools/util/include/", "data/cccl/cub/",
              "data/cccl/libcudacxx/include/", "data/cccl/thrust/", "data/spdlog/include/")
DIST_FILES = ("METADATA", "WHEEL", "top_level.txt", "licenses/")

TRIMMED_INIT = f'''"""FlashInfer {VERSION}, trimmed by KernelIndex (kernelindex/campaigns/flashinfer.py) to its batch
decode and batch prefill attention: the wheel's own __init__.py imports every kernel family FlashInfer ships and
packages the KernelIndex GPU machine lacks. The modules below and every file carried are the wheel's, unchanged
(Apache-2.0, LICENSE in {DIST_INFO}/licenses)."""

from .version import __version__ as __version__
from .version import __git_commit__ as __git_commit__
from . import jit as jit
from .decode import BatchDecodeWithPagedKVCacheWrapper as BatchDecodeWithPagedKVCacheWrapper
from .prefill import BatchPrefillWithPagedKVCacheWrapper as BatchPrefillWithPagedKVCacheWrapper
from .prefill import BatchPrefillWithRaggedKVCacheWrapper as BatchPrefillWithRaggedKVCacheWrapper
'''

NOTICE = f"""FlashInfer {VERSION} (flashinfer-python on PyPI), Copyright the FlashInfer team, Apache License 2.0.
This is a subset of the wheel's files, unchanged except flashinfer/__init__.py (replaced: see its docstring).
The licenses of FlashInfer and of what it vendors (CUTLASS, CCCL, spdlog …) are in {DIST_INFO}/licenses.
"""


class FlashInferCarryError(ValueError):
    """FlashInfer's part of the carry cannot be made; the message says what to do."""


def keep(name: str) -> bool:
    """Whether the wheel member ``name`` travels."""
    parts = PurePosixPath(name).parts
    if parts[0] == DIST_INFO:
        rest = "/".join(parts[1:])
        return any(rest == f or (f.endswith("/") and rest.startswith(f)) for f in DIST_FILES)
    if parts[0] != "flashinfer" or name.endswith("/"):
        return False
    inner = "/".join(parts[1:])
    if len(parts) == 2:
        return inner.endswith(".py") and inner != "__init__.py"
    if parts[1] in PACKAGES:
        return True
    if inner.startswith("data/csrc/"):
        return len(parts) == 4  # the top-level files the JIT generators copy; the subfolders are other families
    return any(inner.startswith(tree) for tree in DATA_TREES)


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def trim(wheel: Path, out: Path) -> tuple[int, int]:
    """Write the trimmed package to ``out`` (.tar.xz); returns (files, bytes before compression)."""
    files = raw = 0
    with zipfile.ZipFile(wheel) as z, lzma.open(out, "wb", preset=9) as xz, \
            tarfile.open(fileobj=xz, mode="w") as tar:
        for name in sorted(n for n in z.namelist() if keep(n)):
            data = z.read(name)
            _add(tar, name, data)
            files, raw = files + 1, raw + len(data)
        for name, text in (("flashinfer/__init__.py", TRIMMED_INIT), ("NOTICE-flashinfer.txt", NOTICE)):
            _add(tar, name, text.encode())
    return files, raw


def _trim_key() -> str:
    """What the trimmed package depends on: the pinned wheel and the rules of what travels."""
    rules = [WHEEL_SHA256, TRIMMED_INIT, NOTICE, repr((PACKAGES, DATA_TREES, DIST_FILES)), inspect.getsource(keep)]
    return hashlib.sha256("\0".join(rules).encode()).hexdigest()[:12]


def trimmed(wheel: Path, cache: Path) -> tuple[int, int]:
    """The trimmed package in ``cache`` (made once: xz at preset 9 takes minutes on a busy machine), remade when the
    rules change; returns (files, bytes before compression)."""
    made = cache / f"{TRIMMED}.{_trim_key()}"
    counts = made.with_name(made.name + ".json")
    if not (made.is_file() and counts.is_file()):
        files, raw = trim(wheel, made.with_name(made.name + ".part"))
        made.with_name(made.name + ".part").replace(made)
        counts.write_text(json.dumps([files, raw]))
    files, raw = json.loads(counts.read_text())
    return files, raw


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(cache: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(cache), *args], check=True)


def download(cache: Path) -> tuple[Path, Path]:
    """The pinned wheels in ``cache`` (downloaded once), each checked against its SHA-256 digest."""
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / WHEEL).is_file():
        _pip_download(cache, f"flashinfer-python=={VERSION}")
    if not (cache / TVM_FFI).is_file():
        _pip_download(cache, "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
                      "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_24_x86_64",
                      "apache-tvm-ffi==0.1.15.post2")
    for name, pinned in ((WHEEL, WHEEL_SHA256), (TVM_FFI, TVM_FFI_SHA256)):
        if not (cache / name).is_file():
            raise FlashInferCarryError(f"pip left no {name} in {cache}: the pin no longer resolves")
        if _sha256(cache / name) != pinned:
            raise FlashInferCarryError(f"{cache / name}: not the pinned wheel (SHA-256 differs); delete it and "
                                       "carry again, or update the pin in campaigns/flashinfer.py")
    return cache / WHEEL, cache / TVM_FFI


def carry(out: Path, cache: Path, kernels: Path | None = None) -> dict[str, object]:
    """FlashInfer's part of the carry in ``out`` (``CARRIED/``): the trimmed package, tvm-ffi's wheel in ``whl/``
    (installed beside the package by fi-setup, not into /tmp/site), and ``kernels`` (an earlier fi-build's
    ``KERNELS`` from the lane's other GPU) when given."""
    wheel, tvm_ffi = download(cache)
    folder = out / CARRIED
    (folder / "whl").mkdir(parents=True)
    shutil.copy(tvm_ffi, folder / "whl")
    files, raw = trimmed(wheel, cache)
    shutil.copy(cache / f"{TRIMMED}.{_trim_key()}", folder / TRIMMED)
    if kernels is not None:
        if not kernels.is_file():
            raise FlashInferCarryError(f"no {kernels}: give the {KERNELS} an earlier fi-build left in its call's OUT")
        shutil.copy(kernels, folder / KERNELS)
    return {"flashinfer": VERSION, "flashinfer_files": files, "flashinfer_unpacked_mib": round(raw / 2**20, 1),
            "flashinfer_mib": round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 2),
            "flashinfer_kernels": kernels is not None}


def env(home: Path) -> dict[str, str]:
    """What a process needs to import the unpacked FlashInfer and reuse its kernel cache. One kernel target for
    both GPUs of the lane (the H100 and the H200 are sm_90a): one cache path, built once."""
    python_path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": f"{home / 'site'}{':' + python_path if python_path else ''}",
            "FLASHINFER_WORKSPACE_BASE": str(home / "ws"),
            "FLASHINFER_CUDA_ARCH_LIST": os.environ.get("FLASHINFER_CUDA_ARCH_LIST", "9.0a"),
            "MAX_JOBS": os.environ.get("MAX_JOBS", str(os.cpu_count() or 1))}


def is_set_up(home: Path) -> bool:
    return any((home / "site").glob(".carried-*"))


def setup(carried: Path, home: Path, say: Callable[[str], None]) -> int:
    """Unpack the carried package and tvm-ffi into ``home/site`` unless this carry is there already, and place
    the other GPU's built kernels in the cache when carried. 0 when FlashInfer imports."""
    tarball = carried / TRIMMED
    if not tarball.is_file():
        say(f"fi-setup: no {tarball}: make the carry with `ki runner campaign carry --flashinfer`")
        return 2
    marker = home / "site" / f".carried-{_sha256(tarball)[:16]}"
    if marker.exists():
        say(f"fi-setup: {home / 'site'} already holds this carry ({marker.name})")
        return 0
    shutil.rmtree(home / "site", ignore_errors=True)
    (home / "site").mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(home / "site", filter="data")
    wheels = [str(w) for w in sorted((carried / "whl").glob("*.whl"))]
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                "--no-compile", "--target", str(home / "site"), *wheels], capture_output=True,
                               text=True)
    if installed.returncode:
        say(f"fi-setup: pip could not install {' '.join(wheels)}: {installed.stderr.strip()[-400:]}")
        return 1
    if (carried / KERNELS).is_file():
        (home / "ws").mkdir(parents=True, exist_ok=True)
        with tarfile.open(carried / KERNELS) as tar:
            modules = sum(1 for name in tar.getnames() if name.endswith(".so"))
            tar.extractall(home / "ws", filter="data")
        say(f"fi-setup: {modules} prebuilt kernel modules placed in the cache")
    unpacked = sum(p.stat().st_size for p in (home / "site").rglob("*") if p.is_file())
    say(f"fi-setup: unpacked {unpacked / 2**20:.0f} MiB into {home / 'site'}")
    found = subprocess.run([sys.executable, "-c", "import flashinfer, tvm_ffi; print('flashinfer', "
                            "flashinfer.__version__, 'tvm_ffi', tvm_ffi.__version__)"], capture_output=True,
                           text=True, env={**os.environ, **env(home)})
    answer = (found.stdout + found.stderr).strip().splitlines()
    say(f"fi-setup: {answer[-1] if answer else 'no answer'}"
        f"{'' if found.returncode == 0 else ' (import flashinfer failed with the machine packages)'}")
    if found.returncode == 0:  # the next call on this machine skips it; one that failed unpacks again
        marker.touch()
    return found.returncode


def pack_kernels(home: Path, out: Path) -> int:
    """The built modules under the cache as ``out/KERNELS`` (for the lane's other GPU); their count."""
    modules = sorted((home / "ws").rglob("*.so")) if (home / "ws").exists() else []
    with tarfile.open(out / KERNELS, "w:xz") as tar:
        for module in modules:
            tar.add(module, arcname=str(Path(".") / module.relative_to(home / "ws")))
    return len(modules)


def build_note(summary_file: Path) -> str:
    """The build's cost and checks in one line, for the step's ledger entry (empty without its summary)."""
    if not summary_file.is_file():
        return ""
    summary = json.loads(summary_file.read_text())
    build, checks = summary.get("build", {}), summary.get("checks", [])
    passed = sum(1 for c in checks if c.get("passed"))
    return (f"FlashInfer {summary.get('versions', {}).get('flashinfer', '?')}: {len(build.get('modules', []))} "
            f"kernel modules built in {build.get('build_s')} s on {build.get('cpus')} CPUs "
            f"({len(build.get('already_built', []))} already built); checks {passed} passed, "
            f"{len(checks) - passed} failed")


def summary_lines(folder: Path) -> list[str]:
    """The FlashInfer runs of a step's summaries (``folder/summary-*.json``) as a table: definition, case,
    implementation, status, median (stream time, µs), the plan's host cost (µs), floor (µs) and a failure's detail;
    then per implementation the definitions with 4 or more passed cases (issue 45's bar: 12 at 4 workloads)."""
    def us(ns: object) -> str:
        return "-" if ns is None else f"{float(ns) / 1e3:,.1f}"  # type: ignore[arg-type]

    passed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    lines = [f"{'definition':42} {'case':34} {'implementation':26} {'status':20} {'median µs':>10} {'plan µs':>8} "
             f"{'floor µs':>9}"]
    for path in sorted(folder.glob("summary-*.json")):
        for slug, entry in sorted(json.loads(path.read_text()).get("operations", {}).items()):
            for row in entry.get("runs", []):
                if not row["implementation"].startswith("flashinfer"):
                    continue
                lines.append(f"{slug:42} {row['case'][:34]:34} {row['implementation']:26} {row['status']:20} "
                             f"{us(row.get('median_ns')):>10} {us(row.get('plan_ns')):>8} "
                             f"{us(row.get('floor_ns')):>9}")
                if row["status"] == "passed":
                    passed[row["implementation"]][slug] += 1
                elif row.get("detail"):
                    lines.append(f"    {row['detail'][:240]}")
    for impl, by_slug in sorted(passed.items()):
        lines.append(f"{impl}: {sum(1 for n in by_slug.values() if n >= 4)} definitions with ≥ 4 passed cases "
                     f"({sum(by_slug.values())} passed runs)")
    return lines


def main(argv: list[str]) -> int:
    """``python3 -m kernelindex.campaigns.flashinfer summary FOLDER``: the table of a folder of step summaries (a
    call's ``summaries.tgz`` unpacked, or the machine's ``WORK/c``)."""
    if len(argv) != 2 or argv[0] != "summary":
        print("python3 -m kernelindex.campaigns.flashinfer summary FOLDER", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(Path(argv[1]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
