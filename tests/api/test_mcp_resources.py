"""The MCP policy resources are the /docs template's text (web/mcp_server/resources.py): its tables, written
as calls of the m.table macro, still read as tables, each set apart from the paragraph that follows it."""

from __future__ import annotations

from kernelindex.web.mcp_server.resources import policy_text


def test_a_docs_table_reads_as_rows_set_apart_from_the_next_paragraph() -> None:
    lines = [line.strip() for line in policy_text("floor").splitlines()]
    total = lines.index("| Total | 85,983,232 (86.0 MB)")
    assert lines[total - 1].startswith("| k_out |") and lines[total + 1] == ""
    assert lines[total + 2].startswith("85,983,232 B / ")
    assert "{%" not in policy_text("methodology") and "call m.table" not in policy_text("methodology")
