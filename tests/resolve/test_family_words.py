"""A word that names a family means the family, even where another operation lists the same word as an alias
(KernelBench lists each word of a problem's name: level 2's Gemm_Multiply_LeakyReLU has the alias "Gemm")."""

from __future__ import annotations

from kernelindex.resolve.request import pick_operation
from kernelindex.resolve.vocabulary import OperationEntry, build_vocabulary

DENSE = OperationEntry("gemm-n4096-k4096", "GEMM N 4096 K 4096", "gemm", (), ("M",))
MATMUL = OperationEntry("gpumode-matmul-v2", "matmul (GPU MODE)", "gemm", ("matmul",), ("M",))
FUSED = OperationEntry("kernelbench-2-12-gemm-multiply-leakyrelu", "KernelBench 2/12 Gemm_Multiply_LeakyReLU",
                       "fused pattern", ("Gemm", "Multiply", "LeakyReLU"), ("batch_size",))
RELU = OperationEntry("kernelbench-1-19-relu", "KernelBench 1/19 ReLU", "activation", ("ReLU",), ("dim",))


def test_a_family_word_picks_the_family_before_aliases_of_the_same_word() -> None:
    vocab = build_vocabulary([DENSE, MATMUL, FUSED, RELU], [])
    pick = pick_operation("gemm", vocab)
    assert pick is not None and pick.how == "family"
    assert set(pick.slugs) == {"gemm-n4096-k4096", "gpumode-matmul-v2"}


def test_an_alias_that_names_no_family_still_ranks_before_titles_and_families() -> None:
    vocab = build_vocabulary([DENSE, MATMUL, FUSED, RELU], [])
    relu = pick_operation("relu", vocab)
    assert relu is not None and relu.how == "alias" and relu.slugs == ("kernelbench-1-19-relu",)
    matmul = pick_operation("matmul", vocab)  # a curated synonym of the GEMM family (resolve/words.py)
    assert matmul is not None and matmul.how == "synonym" and set(matmul.slugs) == {DENSE.slug, MATMUL.slug}


def test_a_family_word_after_other_words_narrows_by_every_operation_it_names() -> None:
    """'kernelbench gemm' keeps the KernelBench problems 'gemm' names in any way (the fused pattern by its alias);
    'gemm' alone is the family."""
    from kernelindex.resolve.grammar import parse_query

    kb_matmul = OperationEntry("kernelbench-1-1-square-matrix-multiplication", "KernelBench 1/1 Square matmul",
                               "gemm", ("kernelbench",), ("N",))
    fused = OperationEntry(FUSED.slug, FUSED.title, FUSED.family, (*FUSED.aliases, "kernelbench"), FUSED.axes)
    vocab = build_vocabulary([DENSE, MATMUL, fused, kb_matmul], [])
    assert set(parse_query("kernelbench gemm", vocab).operation_candidates) == {fused.slug, kb_matmul.slug}
    assert set(parse_query("gemm", vocab).operation_candidates) == {DENSE.slug, MATMUL.slug, kb_matmul.slug}
