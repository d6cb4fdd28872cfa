"""Adding to the runner is a module of ``runner/ops`` (docs/design.md §16): ``operations()`` discovers every
module of the package, so a new operation's module, with its adapters, is found with no list to edit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kernelindex.runner import ops


def test_a_new_module_of_the_ops_package_is_found_with_no_list_to_edit(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "things_for_a_test.py").write_text(
        "from dataclasses import replace\n\nfrom kernelindex.runner.ops.rope import OPERATIONS as ROPE\n\n"
        "OPERATIONS = [replace(ROPE[0], slug='things-for-a-test')]\n", encoding="utf-8")
    monkeypatch.setattr(ops, "__path__", [*ops.__path__, str(tmp_path)])
    try:
        found = ops.operations()
    finally:
        sys.modules.pop("kernelindex.runner.ops.things_for_a_test", None)
    assert found["things-for-a-test"].adapters is found["rope"].adapters
