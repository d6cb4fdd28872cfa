"""Physics as a check (issue 42 item 3): every verified run of the shipped catalog whose compulsory bytes over its
figure exceed the bandwidth its GPU's runner measured for the same read/write mix at the same size by more than 3%
(policy/ceilings; a run without a v4 table of its own is held to its GPU's, registry/measured_ceilings.yaml), and
how many of them hold a record today: flagged runs hold none (readmodel/cohorts.cohort_record_events).

Two doors print it: ``bench/ceiling_check.py`` (issue 42's check over the shipped catalog) and
``ki runner campaign ceiling-check`` (a campaign's after-ship step); both exit 1 if any such run holds a record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kernelindex.catalog.db import Catalog
from kernelindex.readmodel.cohorts import cohort_record_events, cohorts_of
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.objects import verified_operation_slugs


def check(catalog: Catalog, say: Callable[[str], None] = print) -> int:
    """Print (``say``) the report; 1 if a flagged run holds a record, else 0."""
    checked: Counter[str] = Counter()
    flagged: list[tuple[str, Any, str, Any]] = []
    holders: list[str] = []
    for slug in verified_operation_slugs(catalog):
        data = load_operation(catalog, slug)
        for cohort in cohorts_of(data).values():
            events = cohort_record_events(cohort)
            holder = events[-1].holder if events else None
            for run in cohort.runs:
                if not run.attested or run.superseded_by is not None or run.ceiling_check is None:
                    continue
                gpu = data.environments[run.environment].spec.hardware.product
                checked[gpu] += 1
                if run.ceiling_check.exceeds:
                    flagged.append((slug, run, gpu, run.ceiling_check))
                    if holder == run.digest:
                        holders.append(run.run_id)
    for gpu, count in sorted(checked.items()):
        say(f"{gpu}: {count} current verified runs checked against the measured ceiling of their mix and size")
    say(f"flagged (implied bandwidth over the ceiling by more than 3%): {len(flagged)}")
    for slug, run, gpu, c in sorted(flagged, key=lambda f: -f[3].ratio)[:40]:
        say(f"  {slug} {run.run_id} {gpu}: {c.implied_bytes_per_s / 1e9:,.0f} GB/s vs "
              f"{c.ceiling_bytes_per_s / 1e9:,.0f} GB/s ({c.ratio:.3f}x), {run.spec.timing.method}")
    say(f"verified records whose implied bandwidth exceeds their GPU's measured ceiling: {len(holders)}")
    return 1 if holders else 0

