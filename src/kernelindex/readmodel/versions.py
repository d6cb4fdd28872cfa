"""Which version of each operation a worker serves. Every publication bumps the catalog version and
records the operations it changed (``catalog/changes.py``); a worker that sees a new catalog version
reads those records once, so an operation's own version moves only when something of it changed.
Per-operation data and answers are kept by that version: a publication of rope reloads rope only.
A version nobody recorded (an older catalog, a hand edit) counts as changing every operation. A worker
reads the whole record on its first sighting of a catalog, so every worker names an operation's data
by the same version (the stored summaries of ``readmodel/summaries.py`` are kept by it).

One more scope is versioned the same way: the inputs of the GPUs' attainable bandwidths (verified runs,
runners' measured ceilings), recorded under ``MAY_MOVE_ATTAINABLE`` by a publication that adds or
corrects one. Its version keys the attainable figures; an operation's answers are kept by the figures
of its own GPUs, so they move only when one of those figures does (``readmodel/loading.py``)."""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.exc import SQLAlchemyError

from kernelindex.catalog.changes import MAY_MOVE_ATTAINABLE, changes_between
from kernelindex.catalog.db import Catalog

log = logging.getLogger("kernelindex.readmodel")
_SEEN_KEPT = 256  # catalog versions whose first sighting a worker remembers (older ones: long superseded)


@dataclass(frozen=True)
class Versions:
    """One catalog version as a worker sees it."""

    catalog: int
    everything: int  # the last version that changed every operation
    changed: Mapping[str, int] = field(default_factory=dict)  # slug → last version that changed it, if later

    def of(self, slug: str) -> int:
        """The version of this operation's data: the last catalog version that changed it."""
        return self.changed.get(slug, self.everything)

    @property
    def attainable(self) -> int:
        """The version of the attainable bandwidths' inputs: the last catalog version that may have moved one."""
        return self.of(MAY_MOVE_ATTAINABLE)


class VersionTracker:
    """Per process: the latest ``Versions`` of each catalog, and when each catalog version was first seen."""

    def __init__(self) -> None:
        self._known: dict[str, Versions] = {}
        self._seen: dict[str, tuple[list[int], list[float]]] = {}  # versions ascending, first seen (monotonic)
        self._lock = threading.Lock()

    def current(self, catalog: Catalog) -> Versions:
        """The catalog's versions now: one indexed read, plus one read of the change records when the
        catalog version moved since this worker last looked."""
        version = catalog.version()
        known = self._known.get(catalog.url)
        if known is not None and known.catalog == version:
            return known
        with self._lock:
            known = self._known.get(catalog.url)
            if known is None or known.catalog != version:
                known = self._known[catalog.url] = _advanced(catalog, known, version)
                self._note_seen(catalog.url, version)
            return known

    def superseded_for(self, catalog: Catalog, version: int) -> float | None:
        """Seconds since this worker first saw a catalog version newer than ``version``: None when it has
        not, infinity when ``version`` is older than every version it remembers."""
        versions, seen = self._seen.get(catalog.url, ([], []))
        if not versions or version >= versions[-1]:
            return None
        if version < versions[0]:
            return float("inf")
        return time.monotonic() - seen[bisect.bisect_right(versions, version)]

    def _note_seen(self, url: str, version: int) -> None:
        versions, seen = self._seen.setdefault(url, ([], []))
        if versions and version < versions[-1]:  # the catalog was recreated: start over
            versions.clear()
            seen.clear()
        if not versions or version > versions[-1]:
            versions.append(version)
            seen.append(time.monotonic())
        del versions[:-_SEEN_KEPT], seen[:-_SEEN_KEPT]


def _advanced(catalog: Catalog, known: Versions | None, version: int) -> Versions:
    if known is None or version < known.catalog:  # first sighting: read the whole record, so every
        known = Versions(0, 0)  # worker names an operation's data by the same version (stored summaries)
    try:
        with catalog.engine.connect() as conn:
            changes = changes_between(conn, known.catalog, version)
    except SQLAlchemyError:  # a catalog without change records: treat it as a change to everything
        log.warning("could not read what catalog version %s changed; reloading every operation", version,
                    exc_info=True)
        return Versions(version, version)
    everything = max([known.everything, *(v for v, slug in changes if slug is None)])
    changed = {slug: v for slug, v in known.changed.items() if v > everything}
    for v, slug in changes:
        if slug is not None and v > everything:
            changed[slug] = max(v, changed.get(slug, v))
    return Versions(version, everything, changed)


VERSIONS = VersionTracker()
