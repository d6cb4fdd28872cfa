"""The Atom feed's newest changes are taken from each operation's own newest record events, kept with its summary
(issue 50: after a publication only the changed operations' events are listed again): they are exactly the newest
of every change, before and after a publication changes one operation's records."""

from __future__ import annotations

from datetime import datetime

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lifecycle import retract
from kernelindex.readmodel.changes import all_changes, latest_changes
from kernelindex.readmodel.operations import operation_page


def _positions(changes: list) -> list[tuple[str, str, str]]:
    return [c.position for c in changes]


def _newest_of_all(catalog: Catalog, count: int, now: datetime) -> list[tuple[str, str, str]]:
    return sorted(_positions(all_changes(catalog, now)), reverse=True)[:count]


def test_the_feed_is_the_newest_of_every_change_after_a_publication_too(liger_catalog: Catalog,
                                                                        now: datetime) -> None:
    for count in (5, 50):
        assert _positions(latest_changes(liger_catalog, count, now=now)) == _newest_of_all(liger_catalog, count, now)
    leader = operation_page(liger_catalog, "rope", now=now).ranked[0].run_id
    retract(liger_catalog, leader, reason="timer bug", actor="pytest")
    feed = latest_changes(liger_catalog, 50, now=now)
    assert _positions(feed) == _newest_of_all(liger_catalog, 50, now)
    assert any(c.kind == "retraction" for c in feed)
    assert any(c.kind == "record" for c in feed)
