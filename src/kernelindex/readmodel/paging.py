"""Numbered pages of a long list on an HTML page and its JSON twin (``?page=2``): the page's
model carries one page of the list and a ``Paging`` that says where it is, so the HTML's
previous/next links and the JSON twin's page cannot disagree. (The API's list endpoints use
opaque cursors instead; a page of a page model is addressed by number so people can share it.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from kernelindex.readmodel.errors import BadParameter
from kernelindex.readmodel.jsonable import JsonModel

T = TypeVar("T")


@dataclass
class Paging(JsonModel):
    page: int  # 1-based
    pages: int  # at least 1, even for an empty list
    per_page: int
    total: int
    first: int  # 1-based position of the page's first item (0 when the list is empty)
    last: int
    previous: int | None
    next: int | None


def page_of(items: Sequence[T], page: str | int | None, per_page: int) -> tuple[list[T], Paging]:
    """Page ``page`` (1 when not given) of ``items``; a page past the last is a BadParameter that
    names the last page."""
    number = int(page) if page else 1
    pages = max(1, -(-len(items) // per_page))
    if number < 1 or number > pages:
        raise BadParameter("page", f"page {number} does not exist: pages run from 1 to {pages}")
    start = (number - 1) * per_page
    chunk = list(items[start:start + per_page])
    return chunk, Paging(number, pages, per_page, len(items), start + 1 if chunk else 0, start + len(chunk),
                         number - 1 if number > 1 else None, number + 1 if number < pages else None)
