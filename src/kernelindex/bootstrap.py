"""Start-up: publish the data shipped with the package that the catalog does not hold yet. Lives
outside catalog/ because it orchestrates sources and trust, which depend on the catalog, not the
other way round.

Each signed bundle is checked on its own, every start, by its digest against the attestations
recorded when it was published, so a bundle added to a later release is published on the first
start after the upgrade. Publishing is idempotent, so facts already present (a runner key trusted
by hand, a bundle published with ``ki publish``) are found and left alone.

Bundles carry measurements only. What the package itself decides — which runner keys are trusted
(``data/runners/*.pub``) and which shipped runs supersede older ones (``data/supersessions.jsonl``) —
is applied here as administrative acts of the operator starting the server, from package data.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from kernelindex.catalog.attestations import attested_bundles
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.holdings import has_runs, runs_present, supersession_digests
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.canonical import ManifestSyntaxError, strict_json_loads
from kernelindex.domain.manifests import ManifestError, Supersession, build, digest_of
from kernelindex.readmodel.summaries import ensure_summaries
from kernelindex.sources.declaration import SourceDeclaration
from kernelindex.sources.registry import declarations
from kernelindex.trust.bundles import INDEX_FILE, BundleError, bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

log = logging.getLogger("kernelindex.bootstrap")
BOOTSTRAP_ACTOR = "kernelindex-bootstrap"
VERIFIED = "verified"  # the signed runner bundles, the trusted runner keys and the shipped supersessions


# The registered sources (sources/registry.py), in their import order, then the verified bundles.
ALL_PARTS = (*(source.part for source in declarations()), VERIFIED)
# What a fresh install imports: every bundled source (84,863 runs). The site-wide pages read each
# operation's stored summary (readmodel/summaries.py), so a worker no longer loads every run for them.
BUNDLED_PARTS = ALL_PARTS
PARTS_VARIABLE = "KERNELINDEX_BUNDLED_PARTS"


def configured_parts() -> tuple[str, ...]:
    """The parts named in $KERNELINDEX_BUNDLED_PARTS (comma-separated, e.g. ``liger,export,verified``: a
    smaller install, or the tests' session catalog), else BUNDLED_PARTS."""
    named = tuple(part.strip() for part in os.environ.get(PARTS_VARIABLE, "").split(",") if part.strip())
    unknown = [part for part in named if part not in ALL_PARTS]
    if unknown:
        raise ValueError(f"${PARTS_VARIABLE} names {', '.join(unknown)}, which is not a bundled part; name some of "
                         f"{', '.join(ALL_PARTS)} (comma-separated), or unset it to import them all")
    return named or BUNDLED_PARTS


def ensure_bundled_data(catalog: Catalog, say: Callable[[str], None] | None = None, *,
                        parts: Collection[str] | None = None) -> list[str]:
    """Publish the bundled data named in ``parts`` (default: ``configured_parts()``) that the catalog has
    none of yet: Liger's files, the publishable part of the KernelIndex catalog export, AMD aiter's tuned
    tables, KernelBench, and the verified runner bundles with the shipped supersessions; then store the
    summaries of the operations the site-wide pages read. ``say`` receives progress lines. Returns what
    was imported."""
    say = say or log.info
    parts = configured_parts() if parts is None else parts
    done: list[str] = []
    for source in declarations():
        if source.part in parts:
            done.extend(_import_once(catalog, say, source))
    if VERIFIED in parts:
        with heartbeat(say, "publishing the verified runner bundles"):
            done.extend(_bundled_verified(catalog, say))
            done.extend(apply_shipped_supersessions(catalog))
    # After an import, or an upgrade whose code summarises differently: computed here, once, rather than
    # by every worker's first home page.
    with heartbeat(say, "summarising the operations for the home, records and GPU pages"):
        summarised = ensure_summaries(catalog)
    if summarised:
        say(f"Summarised {summarised} operations for the home, records and GPU pages")
    return done


PROGRESS_S = 5.0  # the longest a first start stays silent (issue 46 item 5)


@contextmanager
def heartbeat(say: Callable[[str], None], doing: str, every_s: float = PROGRESS_S) -> Iterator[None]:
    """Say ``  … still {doing} (N s)`` every ``every_s`` seconds until the block ends, so a long step of a
    first start is never silent; a step shorter than that says nothing more."""
    stop = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not stop.wait(every_s):
            say(f"  … still {doing} ({time.monotonic() - started:.0f} s)")

    thread = threading.Thread(target=tick, daemon=True, name="kernelindex-progress")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def summary_lines(done: list[str]) -> list[str]:
    """What an import did, in a few lines: each source's line, and the verified bundles counted in one
    (a bundle's own line is said as it is published; a refused bundle keeps its line, with why)."""
    bundles = [line for line in done if line.startswith(VERIFIED_PREFIX) and " refused: " not in line]
    runs = sum(int(m.group(1)) for line in bundles if (m := re.search(r": (\d+) new runs", line)))
    rest = [line for line in done if line not in bundles]
    return rest + ([f"verified bundles: {len(bundles)} published, {runs:,} new runs"] if bundles else [])


def _import_once(catalog: Catalog, say: Callable[[str], None], source: SourceDeclaration) -> list[str]:
    """Import a registered source's shipped copy unless the catalog holds runs of it already, never silent for
    longer than ``PROGRESS_S``."""
    if any(has_runs(catalog, name) for name in source.names):
        return []
    say(source.announce)
    with heartbeat(say, source.announce.rstrip("…").lower()):
        lines = source.bundled(catalog, BOOTSTRAP_ACTOR, say)
    for line in lines:
        say(f"  {line}")
    return lines


def bundle_digest(path: Path) -> str | None:
    """The digest a bundle's index declares (checked in full only when it is published)."""
    try:
        digest = json.loads((path / INDEX_FILE).read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        return None
    return digest if isinstance(digest, str) else None


VERIFIED_PREFIX = "verified bundle "


def _bundled_verified(catalog: Catalog, say: Callable[[str], None]) -> list[str]:
    attested = attested_bundles(catalog)
    missing = [p for p in bundled_bundles() if bundle_digest(p) not in attested]
    if not missing:
        return []
    say(f"Publishing {len(missing)} verified runner bundles…")
    bundled_runner_keys(catalog, actor=BOOTSTRAP_ACTOR)
    done: list[str] = []
    for path in missing:
        try:
            report = publish_bundle(catalog, path, actor=BOOTSTRAP_ACTOR)
        except BundleError as exc:  # a damaged install must not keep the site down; say which bundle
            log.error("shipped bundle %s was not published: %s", path.name, exc)
            done.append(f"{VERIFIED_PREFIX}{path.name} refused: {exc}")
            continue
        done.append(f"{VERIFIED_PREFIX}{path.name}: {report.new.get('BenchmarkRun', 0)} new runs")
    return done


# --- shipped supersessions -------------------------------------------------------------------------

SUPERSESSIONS_FILE = "supersessions.jsonl"
SHIPPED_SUPERSESSION_ACTOR = "kernelindex package (data/supersessions.jsonl)"
_SUPERSESSION_FIELDS = {"new", "old", "reason", "at"}


class ShippedCorrectionError(ValueError):
    """A line of data/supersessions.jsonl that cannot be applied; the message names the line."""


def shipped_supersessions(text: str | None = None) -> list[Supersession]:
    """The Supersession facts of ``data/supersessions.jsonl`` (or ``text``): one JSON object a line,
    ``{"new": RUN_DIGEST, "old": RUN_DIGEST, "reason": "...", "at": "2026-12-01T00:00:00Z"}``. The
    package is the actor, and ``at`` comes from the file, so each fact has the same digest on every start."""
    if text is None:
        file = resources.files("kernelindex").joinpath("data", SUPERSESSIONS_FILE)
        text = file.read_text(encoding="utf-8") if file.is_file() else ""
    facts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            facts.append(_supersession(line, f"{SUPERSESSIONS_FILE} line {number}"))
    return facts


def _supersession(line: str, where: str) -> Supersession:
    try:
        data = strict_json_loads(line)
    except (ManifestSyntaxError, ValueError) as exc:
        raise ShippedCorrectionError(f"{where}: not a JSON object ({exc})") from None
    if not isinstance(data, dict) or set(data) != _SUPERSESSION_FIELDS:
        raise ShippedCorrectionError(f"{where}: expected exactly the keys {sorted(_SUPERSESSION_FIELDS)}")
    if data["new"] == data["old"]:
        raise ShippedCorrectionError(f"{where}: a run cannot supersede itself")
    try:
        return build("Supersession", {**data, "actor": SHIPPED_SUPERSESSION_ACTOR})
    except ManifestError as exc:
        raise ShippedCorrectionError(f"{where}: {exc}") from None


def apply_shipped_supersessions(catalog: Catalog, text: str | None = None) -> list[str]:
    """Record the shipped supersessions the catalog lacks, in one publication, as the operator who
    starts the server. A line naming a run the catalog does not hold is skipped and logged; a
    malformed file is logged and applies nothing (a damaged install must not keep the site down)."""
    try:
        facts = shipped_supersessions(text)
    except ShippedCorrectionError as exc:
        log.error("shipped supersessions were not applied: %s", exc)
        return [f"shipped supersessions refused: {exc}"]
    known = supersession_digests(catalog)
    missing = [f for f in facts if digest_of(f) not in known]
    present = runs_present(catalog, {d for f in missing for d in (f.spec.new, f.spec.old)})
    ready = [f for f in missing if f.spec.new in present and f.spec.old in present]
    for fact in (f for f in missing if not (f.spec.new in present and f.spec.old in present)):
        log.warning("shipped supersession of %s by %s skipped: a run is not in this catalog", fact.spec.old,
                    fact.spec.new)
    if not ready:
        return []
    report = publish_manifests(catalog, ready, actor=BOOTSTRAP_ACTOR, source="kernelindex-package",
                               kinds=("Supersession",))
    return [f"shipped supersessions: {report.new.get('Supersession', 0)} recorded"]
