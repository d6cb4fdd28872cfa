"""What the resolver needs to know about one run, independent of how the catalog stores it.

:mod:`kernelindex.resolve.source` fills these from the read model (``load_operation_runs``), so
filters, cohorts and ranks here are the ones the pages show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from functools import cached_property
from typing import Any

from kernelindex import urls
from kernelindex.domain.units import format_duration
from kernelindex.policy.reasons import Reason


@dataclass(frozen=True)
class ImplementationFacts:
    slug: str
    title: str
    language: str
    license: str | None
    usable: bool
    baseline: bool = False
    project: str | None = None
    install_command: str | None = None
    unusable_reasons: tuple[Reason, ...] = ()
    availability: str = ""  # in words, as the operation page's row says it (policy.usability, policy.source_flags)

    def to_json(self) -> dict[str, object]:
        """One dict per implementation, shared by every row that shows it (a batch renders the same
        implementation thousands of times); answers are read, never edited."""
        return self._json

    @cached_property
    def _json(self) -> dict[str, object]:
        return {
            "slug": self.slug, "title": self.title, "project": self.project, "language": self.language,
            "license": self.license, "usable": self.usable, "baseline": self.baseline,
            "install_command": self.install_command,
            "not_usable_reasons": [r.to_json() for r in self.unusable_reasons],
            "url": urls.implementation(self.slug), "availability": self.availability,
        }


@dataclass(frozen=True, kw_only=True)
class CohortIdentity:
    """What every run of one cohort shares, as the resolver reads it: the operation and workload, the GPU,
    the timed region and the protocol (a run's facts and a cohort's result both carry it)."""

    operation: str
    workload_key: str
    axes: Mapping[str, int]
    dtypes: Mapping[str, str]
    gpu: str | None  # registry slug, None when the product is not in the datasheet table
    gpu_label: str
    arch: str | None
    mode: str  # forward | backward | forward+backward | forward-no-grad
    protocol_key: str
    native: bool  # measured by a source's own harness (source-native ranking)
    workload_ref: str = ""  # the value of ?workload= on the operation page
    cohort_ref: str = ""  # the value of ?cohort= on the operation page
    runner: str | None = None  # the KernelIndex runner that measured it (None: its source reported it)

    def identity(self) -> dict[str, Any]:
        """The identity alone, to build another object of the same cohort from (``CohortResult(**…)``)."""
        return {f.name: getattr(self, f.name) for f in fields(CohortIdentity)}


@dataclass(frozen=True, kw_only=True)
class RunFacts(CohortIdentity):
    run_id: str
    cohort_key: str
    implementation: ImplementationFacts
    evidence: str
    eligible: bool
    median_ns: int | None
    p20_ns: int | None
    p80_ns: int | None
    observed_at: datetime
    source: str
    ineligible_reasons: tuple[Reason, ...] = ()
    # The operation page's row note when the run's region does another region's work (this backward only
    # scales the gradient its forward computed; compare forward+backward): readmodel.region_work.
    region_note: str | None = None
    # The runner's host-bound label (wall time and syncs per call beside the device time), as the operation
    # page shows it: readmodel.ranking_notes.host_bound_label.
    host_bound: str | None = None

    @cached_property  # asked for every cohort of every query the resolver matches
    def dtype_values(self) -> frozenset[str]:
        return frozenset(self.dtypes.values())

    @cached_property
    def display(self) -> tuple[str, str]:
        """The median in words and the observation instant in ISO 8601, formatted once per run."""
        return format_duration(self.median_ns, 2), self.observed_at.isoformat()
