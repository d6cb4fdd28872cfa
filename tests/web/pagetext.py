"""Helpers: the visible text of an HTML page, and links in it."""

from __future__ import annotations

import html
import re

_TAGS = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.S)


def text_of(page: str) -> str:
    """Tags removed, entities decoded, whitespace collapsed."""
    return re.sub(r"\s+", " ", html.unescape(_TAGS.sub(" ", page))).strip()


def links_of(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', page)]


def section(page_text: str, start: str, end: str | None = None) -> str:
    begin = page_text.index(start)
    return page_text[begin: page_text.index(end, begin) if end else None]
