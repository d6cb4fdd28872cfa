"""The dispatch map's vocabulary (issue 49; the map itself is ``policy/dispatch_map.py``): a model's
architecture and one step — phase, batch, sequence or context
length, tensor-parallel degree, dtype — to every kernel call of that step with its shapes, per GPU rank.

Pure rules, no catalog: each call names the catalog operations that compute it (``Candidate``: an
operation slug and the workload axes the call binds, in order of preference); ``readmodel.models`` looks
them up. Shapes after tensor parallelism are per rank: column-parallel GEMMs (QKV, gate/up, LM head) split
N, row-parallel ones (attention output, down) split K; attention heads split; norms, RoPE on the local
heads, SwiGLU on the local intermediate. The all-reduces tensor parallelism adds are communication, not
kernels the catalog measures, and are named in ``notes``. docs/models.md says what each call stands for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PHASES = ("decode", "prefill", "train")
DECODE_PAGE_SIZES = (1, 64)  # FlashInfer's paged KV layouts the catalog holds definitions for


class DispatchError(ValueError):
    """A step the model cannot run as asked (e.g. heads not divisible by the tensor-parallel degree)."""


@dataclass(frozen=True)
class Step:
    phase: str  # decode | prefill | train
    batch: int
    seq: int  # decode: the context length (tokens in the KV cache); prefill and train: the sequence length
    tp: int = 1
    dtype: str = "bf16"
    page_size: int = 1  # decode's KV page layout

    @property
    def tokens(self) -> int:
        """Tokens one step processes: one per sequence in decode, the whole sequences otherwise."""
        return self.batch if self.phase == "decode" else self.batch * self.seq

    @property
    def region(self) -> str:
        return "forward+backward" if self.phase == "train" else "forward"


@dataclass(frozen=True)
class Candidate:
    """A catalog operation that computes the call, and the workload axes the call binds (``key``: the
    axes a nearest workload is measured along)."""

    operation: str
    axes: Mapping[str, int]
    key: tuple[str, ...]
    dtypes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelCall:
    name: str  # e.g. attn.qkv_proj
    kind: str  # gemm | attention | rmsnorm | rope | swiglu | embedding | moe | cross-entropy
    count: int  # calls per step (per layer × layers)
    shape: Mapping[str, int]  # what the call is, in the model's words (M, N, K; batch, heads, context …)
    candidates: tuple[Candidate, ...]
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "count": self.count, "shape": dict(self.shape),
                "note": self.note,
                "candidates": [{"operation": c.operation, "axes": dict(c.axes), "key": list(c.key),
                                "dtypes": dict(c.dtypes)} for c in self.candidates]}


@dataclass(frozen=True)
class Dispatch:
    calls: tuple[KernelCall, ...]
    notes: tuple[str, ...]


def gemm(name: str, count: int, m: int, n: int, k: int, note: str = "") -> KernelCall:
    """C[M, N] = A[M, K] @ B[N, K]ᵀ: FlashInfer-Bench names its dense GEMM definitions by N and K."""
    return KernelCall(name, "gemm", count, {"M": m, "N": n, "K": k},
                      (Candidate(f"gemm-n{n}-k{k}", {"m": m, "n": n, "k": k}, ("m",)),), note)


def rmsnorm(name: str, count: int, rows: int, hidden: int, dtype: str) -> KernelCall:
    return KernelCall(name, "rmsnorm", count, {"rows": rows, "hidden": hidden}, (
        Candidate(f"rmsnorm-h{hidden}", {"batch_size": rows, "hidden_size": hidden}, ("batch_size",)),
        Candidate("rms-norm", {"rows": rows, "hidden": hidden}, ("rows", "hidden"), {"T": dtype}),
    ))


def split(what: str, value: int, tp: int) -> int:
    if value % tp:
        raise DispatchError(f"{what} ({value}) is not divisible by the tensor-parallel degree {tp}")
    return value // tp
