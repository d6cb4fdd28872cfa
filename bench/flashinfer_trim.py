"""Trim the flashinfer-python wheel to what its batch decode and batch prefill (paged and ragged) kernels need,
and pack it as one .tar.xz for the GPU machine (bench/flashinfer_carry.sh runs this; docs/flashinfer.md says why).

The wheel is 101 MB (715 MB unpacked): 3,559 Python files for every kernel family FlashInfer ships, and 389 MB
of CUDA sources under ``data/csrc``. The GPU machine takes 64 MiB a call, the repository's tracked files
included. What the attention wrappers need was found by importing ``flashinfer.decode`` and
``flashinfer.prefill`` with the GPU machine's packages (127 FlashInfer modules, all in the subpackages below)
and by reading the JIT generators of the decode and prefill modules (``jit/attention/modules.py``): the
sources they copy from ``data/csrc`` are its top-level files, and the include paths are ``data/include``,
CUTLASS (``data/cutlass/include``, ``tools/util/include``), the vendored CCCL and spdlog (``jit/env.py``).

The wheel's ``__init__.py`` imports every family (MoE, GEMM, communication …) and through them packages the
machine lacks (cuDNN frontend, CUTLASS DSL, cuda-tile); it is replaced by a short one that imports the decode and
prefill modules alone, and says so. Everything else is the wheel's files, unchanged, with its licenses.

    python bench/flashinfer_trim.py WHEEL OUT.tar.xz
"""

from __future__ import annotations

import io
import lzma
import sys
import tarfile
import zipfile
from pathlib import PurePosixPath

VERSION = "0.7.4"
DIST_INFO = f"flashinfer_python-{VERSION}.dist-info"
# Subpackages the import of flashinfer.decode and flashinfer.prefill reaches (with the GPU machine's packages),
# taken whole; ``triton`` for page.py's lazy import.
PACKAGES = ("autotuner", "cudnn", "cute_dsl", "cutile", "jit", "mla", "quantization", "trace", "triton")
DATA_TREES = ("data/include/", "data/cutlass/include/", "data/cutlass/tools/util/include/", "data/cccl/cub/",
              "data/cccl/libcudacxx/include/", "data/cccl/thrust/", "data/spdlog/include/")
DIST_FILES = ("METADATA", "WHEEL", "top_level.txt", "licenses/")

TRIMMED_INIT = f'''"""FlashInfer {VERSION}, trimmed by KernelIndex (bench/flashinfer_trim.py) to its batch decode and
batch prefill attention: the wheel's own __init__.py imports every kernel family FlashInfer ships and packages the
KernelIndex GPU machine lacks. The modules below and every file carried are the wheel's, unchanged
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


def keep(name: str) -> bool:
    """Whether the wheel member ``name`` travels."""
    path = PurePosixPath(name)
    parts = path.parts
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


def trim(wheel: str, out: str) -> tuple[int, int]:
    """Write the trimmed package to ``out``; returns (files, bytes before compression)."""
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


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    files, raw = trim(argv[0], argv[1])
    print(f"flashinfer {VERSION} trimmed: {files} files, {raw / 2**20:.1f} MiB unpacked")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
