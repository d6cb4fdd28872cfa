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

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.exc import SQLAlchemyError

from kernelindex.catalog.changes import MAY_MOVE_ATTAINABLE, changes_between
from kernelindex.catalog.db import Catalog

log = logging.getLogger("kernelindex.readmodel")


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
    """Per process: the latest ``Versions`` of each catalog."""

    def __init__(self) -> None:
        self._known: dict[str, Versions] = {}
        self._lock = threading.Lock()

    def known(self, catalog: Catalog, version: int) -> Versions | None:
        """The catalog's versions at ``version`` if this worker has read them (no database read), else None."""
        known = self._known.get(catalog.url)
        return known if known is not None and known.catalog == version else None

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
            return known


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
