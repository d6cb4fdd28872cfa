"""Reviewed links from KernelBench problems to catalog operations (registry/sources/kernelbench/links.yaml)."""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml

from kernelindex import urls


@cache
def reviewed() -> dict[str, dict[str, str]]:
    path = resources.files("kernelindex.registry").joinpath("sources", "kernelbench", "links.yaml")
    return dict(yaml.safe_load(path.read_text(encoding="utf-8"))["links"])


def reviewed_links() -> dict[str, dict[str, str]]:
    """KernelBench operation slug → its metadata links (label → catalog path)."""
    return {slug: {f"computes exactly: {entry['operation']}": urls.operation(entry["operation"])}
            for slug, entry in reviewed().items()}
