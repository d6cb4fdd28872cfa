"""Every reviewed KernelBench link joins a problem of the shipped problem sets to an operation the catalog
defines, and says how (registry/sources/kernelbench/links.yaml)."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.sources.kernelbench import read_kernelbench, shipped_path
from kernelindex.sources.kernelbench.links import reviewed, reviewed_links
from kernelindex.sources.kernelbench.operations import slug_of
from kernelindex.sources.kernelbench.problem_file import problem_of


def test_links_join_shipped_problems_to_catalog_operations() -> None:
    data = read_kernelbench(shipped_path().read_bytes(), "shipped")
    newest = max(data.timings, key=lambda t: t.commit_date).problems
    slugs = {slug_of(problem_of(file, data.problems[digest])) for file, digest in data.sets[newest].files.items()}
    assert {"kernelbench-1-23-softmax", "kernelbench-1-95-crossentropyloss"} <= set(reviewed())
    for slug, entry in reviewed().items():
        assert slug in slugs, slug
        assert entry["operation"] in registry.operations(), entry
        assert len(entry["relation"]) > 80  # the reviewed reading, in words
    assert reviewed_links()["kernelbench-1-95-crossentropyloss"] == {
        "computes exactly: cross-entropy": "/operations/cross-entropy"}
