"""MCP tools that show a page, generated from the page's declaration (``views/table.py``): the tool's
arguments are the view's subject and query parameters, with their names, patterns, limits, closed lists
and descriptions (``views/params.py``), so a parameter a page gains reaches its tool without a second
declaration (issue 48 item 3). Each tool answers with the view's JSON, as its twin under ``/api/v1`` does."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field

from kernelindex.views.params import Param
from kernelindex.views.table import VIEW

# tool name → the view it shows (the tool's description is in server.DESCRIPTIONS)
PAGE_TOOLS = {
    "get_operation": "operation",
    "get_implementation": "implementation",
    "get_run_evidence": "run",
    "get_reproduction": "reproduction",
    "list_records": "records",
}


def _annotation(param: Param, *, required: bool) -> Any:
    """The argument's type: a string of the parameter's pattern and length, or one of its closed list."""
    kind: Any = Literal[param.choices] if param.choices else str
    field = Field(description=param.description) if param.choices else \
        Field(pattern=param.pattern, max_length=param.max_length, description=param.description)
    return Annotated[kind if required else kind | None, field]


def signature_of(view_name: str) -> inspect.Signature:
    """The tool's signature: the view's subject (required) then its query parameters (optional)."""
    view = VIEW[view_name]
    arguments = []
    if view.subject is not None:
        arguments.append(inspect.Parameter(view.subject.name, inspect.Parameter.KEYWORD_ONLY,
                                           annotation=_annotation(view.subject, required=True)))
    arguments += [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                    annotation=_annotation(p, required=False)) for p in view.query]
    return inspect.Signature(arguments, return_annotation=CallToolResult)


def page_tool(tool: str, show: Callable[[str, str | None, dict[str, Any]], CallToolResult]) -> Callable[..., Any]:
    """The tool function for ``tool``: its signature from the view, its body ``show(view, subject, query)``."""
    view = VIEW[PAGE_TOOLS[tool]]

    def call(**arguments: Any) -> CallToolResult:
        subject = arguments.pop(view.subject.name) if view.subject is not None else None
        return show(view.name, subject, arguments)

    call.__name__ = call.__qualname__ = tool
    call.__signature__ = signature_of(view.name)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in call.__signature__.parameters.values()}  # type: ignore[attr-defined]
    call.__annotations__["return"] = CallToolResult
    return call
