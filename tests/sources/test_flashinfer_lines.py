"""FlashInfer-Bench's solutions of FlashInfer's own API, as the export importer maps them (policy/library_lines):
on the FlashInfer project and line the runner's adapters use for the same definition, named as a user knows them,
their source name kept and their reported runs unchanged; other ``flashinfer_wrapper_*`` solutions (a GEMM's
torch.nn.functional.linear) stay their own."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from kernelindex import registry
from kernelindex.domain.manifests import digest_of
from kernelindex.policy.library_lines import flashinfer_call_of
from kernelindex.sources.kernelindex_export import bundled_export_path
from kernelindex.sources.kernelindex_export.importer import map_export_content


@cache
def _mapped() -> Any:
    path = bundled_export_path()
    return map_export_content(path.read_bytes(), str(path), "sha256:test", only_source="flashinfer-bench")


def _implementations() -> dict[str, Any]:
    return {m.metadata.name: m for m in _mapped().sources["flashinfer-bench"].manifests
            if m.kind == "ImplementationRevision"}


def test_the_call_is_read_from_the_description_of_a_wrapper_solution_only() -> None:
    assert flashinfer_call_of("flashinfer_wrapper_a9588f", "Solution using FlashInfer "
                              "BatchDecodeWithPagedKVCacheWrapper.") == "BatchDecodeWithPagedKVCacheWrapper"
    assert flashinfer_call_of("flashinfer_wrapper_8028be", "torch.nn.functional.linear baseline") is None
    assert flashinfer_call_of("my_kernel", "faster than BatchDecodeWithPagedKVCacheWrapper") is None


def test_b200_wrapper_rows_sit_on_the_runners_flashinfer_line_and_project() -> None:
    torch = pytest.importorskip("torch")  # noqa: F841 - the runner's adapters import it
    from kernelindex.runner.ops import operations

    slug = "gqa-paged-decode-h32-kv8-d128-ps1"
    runner = next(a for a in operations()[slug].adapters() if a.key == "flashinfer-decode")
    found = _implementations()[runner.line]
    assert found.metadata.title == "FlashInfer batch decode, paged KV"
    assert found.metadata.labels["source_name"] == "flashinfer_wrapper_a9588f"
    assert found.spec.project == digest_of(registry.project_manifest("flashinfer"))
    assert runner.project == "flashinfer" and runner.title.endswith("batch decode, paged KV")


def test_every_attention_wrapper_is_mapped_and_the_rest_kept() -> None:
    names = set(_implementations())
    flashinfer = {n for n in names if n.startswith("flashinfer-batch-")}
    # 11 paged decode, 15 paged prefill, 7 ragged prefill GQA definitions, and the absorbed-MLA ragged prefill
    assert len(flashinfer) == 34
    assert "flashinfer-batch-prefill-ragged-mla-ragged-prefill-causal-h16-qk192-vo128" in flashinfer
    assert "flashinfer-batch-prefill-ragged-gqa-ragged-prefill-causal-h8-kv1-d256" in flashinfer
    assert "flashinfer-flashinfer-wrapper-8028be" in names  # gemm: torch.nn.functional.linear, not FlashInfer
    runs = _mapped().sources["flashinfer-bench"].counts["benchmark_runs"]
    assert runs.published == runs.discovered - sum(runs.skipped.values())
