"""The runner's GEMM and GQA attention operations (FlashInfer-Bench's definitions) on the CPU: the registry
copies are the imported definitions (same digests, so runs land on the imported workloads), the drawn
index tensors honour the case, the float64 references agree with independent PyTorch computations, and
our baselines pass the runner's correctness check. The CUDA-only kernels are checked on a GPU (skipped
cleanly without one)."""

from __future__ import annotations

import math
import re

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from op_cases import case as registry_case  # noqa: E402
from op_cases import fresh_inputs, op  # noqa: E402

from kernelindex import registry  # noqa: E402
from kernelindex.domain.manifests import digest_of  # noqa: E402
from kernelindex.runner.correctness import check, relative_error, tolerance_for  # noqa: E402
from kernelindex.runner.ops._gqa import CaseNotSupported, decode_attention, split, token_table  # noqa: E402

RAGGED = "gqa-ragged-prefill-causal-h32-kv8-d128"
DECODE_PS64 = "gqa-paged-decode-h32-kv8-d128-ps64"
DECODE_PS1 = "gqa-paged-decode-h20-kv4-d128-ps1"
MEASURED = re.compile(r"^(gemm-n\d+-k\d+|gqa-ragged-prefill-causal-.*|gqa-paged-decode-.*)$")


def case(slug: str, axes: dict[str, int], dtype: str = ""):  # noqa: ANN201 - a WorkloadCase
    """A case as the export importer builds one: the constant axes bound too, no dtype variables."""
    constants = {name: int(axis.expression) for name, axis in registry.load_operation(slug).spec.axes.items()
                 if axis.role == "constant"}
    return registry_case(slug, {**constants, **axes}, dtype)


def test_registry_copies_are_the_imported_definitions() -> None:
    """16 dense GEMMs, 7 ragged prefills and 11 paged decodes, each with the digest the export importer gives."""
    from pathlib import Path

    from kernelindex.sources.kernelindex_export.operations import map_operation
    from kernelindex.sources.kernelindex_export.read import read_export

    src = Path(registry.__file__).parent.parent / "data" / "kernelindex_export" / "catalog-publishable.jsonl.zst"
    tables = read_export(src.read_bytes(), src)
    aliases: dict[str, list[str]] = {}
    for row in tables.rows["operation_aliases"]:
        aliases.setdefault(row["operationId"], []).append(row["alias"])
    title = registry.source_policy("flashinfer-bench").title
    imported = {row["slug"]: digest_of(map_operation(row, aliases.get(row["id"], []), title))
                for row in tables.rows["operations"] if MEASURED.match(row["slug"])}
    ours = {slug: digest for slug, digest in registry.operation_digests().items() if MEASURED.match(slug)}
    assert ours == imported
    families = [registry.load_operation(s).spec.family for s in ours]
    assert (families.count("gemm"), families.count("gqa-ragged"), families.count("gqa-paged")) == (16, 7, 11)
    assert set(ours) <= set(op_slugs())


def op_slugs() -> list[str]:
    from kernelindex.runner.ops import operations

    return list(operations())


def test_unstated_tolerance_is_the_runners_per_output_dtype() -> None:
    assert tolerance_for(registry.load_operation("gemm-n128-k2048"), case("gemm-n128-k2048", {"m": 4}, "")) == 0.005
    ragged = case(RAGGED, {"total_q": 9, "total_kv": 9, "len_indptr": 3}, "")
    assert tolerance_for(registry.load_operation(RAGGED), ragged) == 0.02  # bf16 output, fp32 lse


def test_gemm_baseline_passes_and_a_wrong_product_fails() -> None:
    slug = "gemm-n128-k2048"
    workload = case(slug, {"m": 16}, "")
    operation, gemm = registry.load_operation(slug), op(slug)
    baseline = next(a for a in gemm.adapters() if a.key == "baseline")
    result = check(operation, workload, gemm, lambda x: baseline.bind(x), in_place=False, device="cpu", trials=2)
    assert result.passed and result.relative_error is not None and result.relative_error < 0.005
    rows_swapped = check(operation, workload, gemm, lambda x: lambda: {"c": x["a"] @ x["b"].flip(0).T},
                         in_place=False, device="cpu", trials=1)
    assert not rows_swapped.passed and "relative error" in rows_swapped.detail
    assert {a.key for a in gemm.adapters()} == {"baseline", "torch-compile-max-autotune", "torch-compile-triton",
                                                   "xla-jax"}


def test_ragged_inputs_split_the_batch_the_same_way_every_time() -> None:
    workload = case(RAGGED, {"total_q": 40, "total_kv": 40, "len_indptr": 5}, "")
    first, second = fresh_inputs(RAGGED, workload, seed=1), fresh_inputs(RAGGED, workload, seed=2)
    assert torch.equal(first["qo_indptr"], second["qo_indptr"]) and torch.equal(first["qo_indptr"], first["kv_indptr"])
    lengths = first["qo_indptr"].diff()
    assert first["qo_indptr"][0] == 0 and first["qo_indptr"][-1] == 40 and bool((lengths >= 1).all())
    assert not torch.equal(first["q"], second["q"])  # values are fresh per check
    assert float(first["sm_scale"]) == pytest.approx(128**-0.5)
    with pytest.raises(CaseNotSupported, match="total_kv"):
        fresh_inputs(RAGGED, case(RAGGED, {"total_q": 9, "total_kv": 12, "len_indptr": 3}, ""))
    assert sum(split(1, 1, 0)) == 1 and len(split(100, 100, 3)) == 100


def _sdpa_per_sequence(x: dict[str, torch.Tensor]) -> torch.Tensor:
    bounds = x["qo_indptr"].tolist()
    parts = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        q, k, v = (x[n][lo:hi].double().transpose(0, 1) for n in ("q", "k", "v"))
        parts.append(F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=float(x["sm_scale"]),
                                                    enable_gqa=True).transpose(0, 1))
    return torch.cat(parts)


def test_ragged_reference_agrees_with_sdpa_and_a_direct_log_sum_exp() -> None:
    workload = case(RAGGED, {"total_q": 37, "total_kv": 37, "len_indptr": 4}, "")
    x = fresh_inputs(RAGGED, workload)
    want = op(RAGGED).reference(x)
    assert relative_error(want["output"], _sdpa_per_sequence(x)) < 1e-10
    first_len = int(x["qo_indptr"][1])
    token, head = first_len - 1, 13  # the first sequence's last query sees the whole sequence
    scores = x["q"][token, head].double() @ x["k"][:first_len, head // 4].double().T * float(x["sm_scale"])
    assert float(want["lse"][token, head]) == pytest.approx(float(torch.logsumexp(scores, 0)) / math.log(2))


def test_decode_token_table_follows_pages_and_last_page_fill() -> None:
    workload = case(DECODE_PS64, {"batch_size": 3, "num_kv_indices": 7, "num_pages": 12, "len_indptr": 4}, "")
    x = fresh_inputs(DECODE_PS64, workload)
    ids, starts = token_table(x)
    pages, bounds, last = x["kv_indices"].tolist(), x["kv_indptr"].tolist(), x["kv_last_page_len"].tolist()
    assert len(set(pages)) == 7 and bounds[0] == 0 and bounds[-1] == 7
    for seq in range(3):
        owned = pages[bounds[seq]:bounds[seq + 1]]
        expected = [p * 64 + t for p in owned for t in range(64)][: (len(owned) - 1) * 64 + last[seq]]
        assert ids[starts[seq]:starts[seq + 1]].tolist() == expected
    with pytest.raises(CaseNotSupported, match="pages would repeat"):
        fresh_inputs(DECODE_PS1, case(DECODE_PS1, {"batch_size": 1, "num_kv_indices": 9, "num_pages": 4,
                                                   "len_indptr": 2}, ""))


def test_decode_reference_agrees_with_sdpa_on_the_gathered_tokens() -> None:
    workload = case(DECODE_PS1, {"batch_size": 4, "num_kv_indices": 30, "num_pages": 50, "len_indptr": 5}, "")
    x = fresh_inputs(DECODE_PS1, workload)
    want = op(DECODE_PS1).reference(x)
    bounds, pages = x["kv_indptr"].tolist(), x["kv_indices"].long()
    for b in range(4):
        owned = pages[bounds[b]:bounds[b + 1]]
        k, v = (x[n][owned, 0].double().transpose(0, 1) for n in ("k_cache", "v_cache"))  # page size 1
        q = x["q"][b:b + 1].double().transpose(0, 1)
        got = F.scaled_dot_product_attention(q, k, v, scale=float(x["sm_scale"]), enable_gqa=True)
        assert relative_error(want["output"][b], got.transpose(0, 1)[0]) < 1e-10


def test_the_decode_reference_gathers_a_request_at_a_time_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The float64 reference gathers each request's tokens in turn (the largest traced decode would gather
    47 GiB at once); our timed float32 baseline still gathers them all at once, as its runs did."""
    workload = case(DECODE_PS64, {"batch_size": 5, "num_kv_indices": 11, "num_pages": 20, "len_indptr": 6}, "")
    x = fresh_inputs(DECODE_PS64, workload)
    at_once, each = decode_attention(x, torch.float64), op(DECODE_PS64).reference(x)
    assert torch.equal(at_once["output"], each["output"]) and torch.equal(at_once["lse"], each["lse"])
    gathered: list[int] = []
    original = torch.Tensor.__getitem__

    def counting(self: torch.Tensor, index: object) -> torch.Tensor:
        if isinstance(index, torch.Tensor) and index.dtype == torch.int64 and self.dim() == 3:
            gathered.append(len(index))
        return original(self, index)

    monkeypatch.setattr(torch.Tensor, "__getitem__", counting)
    op(DECODE_PS64).reference(x)
    monkeypatch.undo()
    tokens = token_table(x)[1].tolist()
    assert gathered == [hi - lo for lo, hi in zip(tokens, tokens[1:], strict=False) for _ in "kv"]


@pytest.mark.parametrize("slug", [RAGGED, DECODE_PS64, DECODE_PS1])
def test_our_attention_baseline_passes_the_runners_check(slug: str) -> None:
    axes = ({"total_q": 33, "total_kv": 33, "len_indptr": 4} if slug == RAGGED else
            {"batch_size": 3, "num_kv_indices": 6, "num_pages": 9, "len_indptr": 4})
    workload, definition = case(slug, axes, ""), op(slug)
    ours = definition.adapters()[0]
    assert ours.key == "baseline" and ours.line == f"kernelindex-{slug}"
    result = check(registry.load_operation(slug), workload, definition, lambda x: ours.bind(x), in_place=False,
                   device="cpu", trials=2)
    assert result.passed, result.detail
    keys = {a.key: a for a in definition.adapters()}
    flashinfer = {"flashinfer-decode", "flashinfer-paged-prefill"} if slug != RAGGED else {"flashinfer-ragged-prefill"}
    assert set(keys) == {"baseline", "flash-varlen", "efficient-varlen", "sdpa-cudnn", "flex", *flashinfer}
    assert ("gather" in keys["flash-varlen"].line) == (slug != RAGGED)  # a gathering call says so


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("slug", [RAGGED, DECODE_PS64, DECODE_PS1, "gemm-n4096-k4096"])
def test_every_adapter_passes_on_the_gpu(slug: str) -> None:
    axes = ({"m": 128} if slug.startswith("gemm") else
            {"total_q": 700, "total_kv": 700, "len_indptr": 6} if slug == RAGGED else
            {"batch_size": 8, "num_kv_indices": 300, "num_pages": 400, "len_indptr": 9})
    workload, definition = case(slug, axes, ""), op(slug)
    for adapter in definition.adapters():
        if adapter.missing():  # FlashInfer where it is not installed (the campaign step fi-setup brings it)
            continue
        adapter.start_case()
        if adapter.key == "flashinfer-decode" and slug == DECODE_PS1:  # h20-kv4: group 5, not in its dispatch
            with pytest.raises(Exception, match="group_size"):
                check(registry.load_operation(slug), workload, definition, adapter.bind, in_place=False,
                      device="cuda", trials=2)
            continue
        result = check(registry.load_operation(slug), workload, definition, lambda x, a=adapter: a.bind(x),
                       in_place=False, device="cuda", trials=2)
        assert result.passed, f"{adapter.key}: {result.detail}"
