"""``/feed.atom``: the latest changes (publications, record events, retractions, request completions).

The feed reads every operation's record events (2–3 s of CPU with every bundled source), so its answer
is kept like a page's: per catalog version and day, and per generation of the measurement requests,
whose completions it lists and which move without a catalog version (``web/answer_scope.live_scope``)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from starlette.responses import Response

from kernelindex import urls
from kernelindex.services import reads
from kernelindex.web.answer_scope import keeps_answers
from kernelindex.web.render import environment

router = APIRouter(include_in_schema=False)
FEED_TAG = "tag:kernelindex,2026:feed"


@keeps_answers
@router.get(urls.FEED)
def feed(request: Request) -> Response:
    changes = reads.feed(request.app.state.catalog, request.app.state.clock())
    updated = max((c.at for c in changes), default=datetime(2024, 1, 1, tzinfo=UTC)).isoformat()
    base = configured_base_url(request)  # never the Host header: the answer is cached and shared
    body = environment().get_template("feed.atom.xml").render(changes=changes, updated=updated, base=base,
                                                              feed_id=f"{base}{urls.FEED}" if base else FEED_TAG)
    return Response(body, media_type="application/atom+xml; charset=utf-8")


def configured_base_url(request: Request) -> str:
    """The site's public base URL (``app.state.base_url`` or $KERNELINDEX_BASE_URL, e.g.
    ``https://kernelindex.example``), or "" when none is configured: links are then relative."""
    base = getattr(request.app.state, "base_url", None) or os.environ.get("KERNELINDEX_BASE_URL") or ""
    return str(base).rstrip("/")
