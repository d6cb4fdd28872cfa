"""What a resolution says, as dataclasses with ``to_json()`` (the API, the CLI and the page share it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from kernelindex import urls
from kernelindex.policy.reasons import Reason
from kernelindex.readmodel.labels import Shown, tell_apart, told
from kernelindex.resolve.run_facts import CohortIdentity, RunFacts


@dataclass(frozen=True)
class Mismatch:
    field: str
    requested: str | int
    observed: str | int | None

    def to_json(self) -> dict[str, object]:
        return {"field": self.field, "requested": self.requested, "observed": self.observed}

    def sentence(self) -> str:
        return f"{self.field} {self.observed} (asked {self.requested})"


@dataclass(frozen=True)
class Row:
    run: RunFacts
    rank: int
    rank_label: str
    within_noise: bool
    vs_first: float | None
    stale: bool

    def to_json(self) -> dict[str, object]:
        r = self.run
        median, observed_at = r.display
        return {
            "run_id": r.run_id,
            "rank": self.rank,
            "rank_label": self.rank_label,
            "within_noise": self.within_noise,
            "implementation": r.implementation.to_json(),
            "time_ns": r.median_ns,  # the row's figure, of the statistic the cohort ranks (``ranked_statistic``)
            "time": median,
            # Deprecated aliases of time_ns and time (one release): a mean where the cohort ranks means.
            "median_ns": r.median_ns,
            "median": median,
            "p20_ns": r.p20_ns,
            "p80_ns": r.p80_ns,
            "vs_first": None if self.vs_first is None else round(self.vs_first, 4),
            "evidence": r.evidence,
            "source": r.source,
            "runner": r.runner,
            "observed_at": observed_at,
            "stale": self.stale,
            "region_note": r.region_note,
            "host_bound": r.host_bound,
            "url": urls.run(r.run_id),
        }


@dataclass(frozen=True)
class Hidden:
    run_id: str
    implementation: str
    reason: Reason

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "implementation": self.implementation, **self.reason.to_json()}


@dataclass(frozen=True, kw_only=True)
class CohortResult(CohortIdentity):
    key: str
    eligible_runs: int
    rows: tuple[Row, ...]
    hidden: tuple[Hidden, ...]
    excluded: tuple[Hidden, ...]
    mismatches: tuple[Mismatch, ...] = ()
    query: str = ""
    distinct: str | None = None  # what tells it from a look-alike listed beside it (labels.tell_apart)
    statistic: str = ""  # what its ranking orders by, in a few words ("median device time", "mean, as …")

    @property
    def leader(self) -> Row | None:
        return self.rows[0] if self.rows else None

    @property
    def url(self) -> str:
        """The operation page of this cohort; of its workload when the cohort ranks no run (every run
        superseded or failed: the page shows cohorts with eligible runs, each run keeps its own page)."""
        if not self.rows:
            return urls.operation(self.operation, ("workload", self.workload_ref))
        return urls.operation(self.operation, ("workload", self.workload_ref), ("cohort", self.cohort_ref))

    def label(self) -> str:
        return told(f"{self.gpu_label} · {self.mode}" + ("" if self.native else " · KernelIndex runner"),
                    self.distinct)

    def reads_as(self) -> str:
        """What a reader sees of it before any distinction: its label and its workload."""
        return f"{self.label()} · {sorted(self.axes.items())} · {sorted(self.dtypes.items())}"

    def to_json(self, *, rows: bool = True) -> dict[str, object]:
        out: dict[str, object] = {
            "cohort_key": self.key,
            "label": self.label(),
            "workload": {"key": self.workload_key, "ref": self.workload_ref, "axes": dict(self.axes),
                         "dtypes": dict(self.dtypes)},
            "gpu": {"slug": self.gpu, "label": self.gpu_label, "arch": self.arch},
            "mode": self.mode,
            "protocol": "source-native" if self.native else "kernelindex-runner",
            "runner": self.runner,
            "ranking": "ranking-v1 (source-native: only equal values tie)" if self.native
            else "ranking-v1 (runner: ties when 95% CIs overlap or medians within 1%)",
            "eligible_runs": self.eligible_runs,
            "ranked_statistic": self.statistic,
            "leader": self.leader.to_json() if self.leader else None,
            "hidden_by_filters": [h.to_json() for h in self.hidden],
            "not_ranked": [h.to_json() for h in self.excluded],
            "mismatches": [m.to_json() for m in self.mismatches],
            "query": self.query,
            "url": self.url,
        }
        if rows:
            out["rows"] = [r.to_json() for r in self.rows]
        return out


def told_apart(cohorts: tuple[CohortResult, ...]) -> tuple[CohortResult, ...]:
    """Cohorts listed together that read alike (one GPU and region, two runners) name what tells them apart."""
    shown = [Shown(c.reads_as(), c.runner, c.protocol_key) for c in cohorts]
    return tuple(replace(c, distinct=d) if d else c for c, d in zip(cohorts, tell_apart(shown), strict=True))


@dataclass(frozen=True)
class Neighbour:
    value: int
    query: str
    cohorts: tuple[CohortResult, ...]

    def to_json(self) -> dict[str, object]:
        return {"value": self.value, "query": self.query,
                "leaders": [c.to_json(rows=False) for c in self.cohorts]}


@dataclass(frozen=True)
class Nearest:
    axis: str
    requested: int
    below: Neighbour | None
    above: Neighbour | None

    def to_json(self) -> dict[str, object]:
        return {
            "axis": self.axis,
            "requested": self.requested,
            "message": f"Not measured at {self.axis} {self.requested}",
            "note": "Nearest measured cases; KernelIndex never interpolates a number.",
            "below": self.below.to_json() if self.below else None,
            "above": self.above.to_json() if self.above else None,
        }


@dataclass(frozen=True)
class Gap:
    gpu: str
    gpu_label: str
    scope: str
    message: str
    url: str
    ask_url: str | None = None  # "Ask for this measurement", when the gap is one exact workload on one GPU
    page_url: str | None = None  # the operation page asked for this GPU: floor there, nearest measured GPU

    def to_json(self) -> dict[str, object]:
        return {"gpu": self.gpu, "gpu_label": self.gpu_label, "scope": self.scope, "message": self.message,
                "url": self.url, "ask_url": self.ask_url, "page_url": self.page_url}


@dataclass(frozen=True)
class Choice:
    slug: str
    title: str
    family: str
    eligible_runs: int
    query: str
    on_gpu_runs: int | None = None  # runs on the GPU the query names, leaderboard scores included (None: no GPU)
    constants: Mapping[str, int] | None = None  # axes the operation fixes (what tells look-alikes apart)
    on_gpu_scores: int | None = None  # of on_gpu_runs, suite-scoped leaderboard scores (in no workload's cohort)

    @property
    def evidence_text(self) -> str:
        """"56 runs (9 on the GPU asked for)"; scores said apart, since they rank a whole suite and a page
        shows them beside no workload: "0 runs (23 leaderboard scores on the GPU asked for)"."""
        text = f"{self.eligible_runs:,} runs"
        if self.on_gpu_runs is None:
            return text
        scores = self.on_gpu_scores or 0
        parts = [f"{self.on_gpu_runs - scores:,}"] if self.on_gpu_runs - scores or not scores else []
        parts += [f"{scores:,} leaderboard score{'s' if scores != 1 else ''}"] if scores else []
        return f"{text} ({' and '.join(parts)} on the GPU asked for)"

    def to_json(self) -> dict[str, object]:
        return {"slug": self.slug, "title": self.title, "family": self.family,
                "eligible_runs": self.eligible_runs, "on_gpu_runs": self.on_gpu_runs,
                "on_gpu_scores": self.on_gpu_scores, "evidence_text": self.evidence_text,
                "constants": dict(self.constants or {}), "query": self.query, "url": urls.operation(self.slug)}


@dataclass(frozen=True)
class Resolution:
    # exact | other_protocols | not_measured | no_exact_evidence | choose_operation | no_operation | no_runs |
    # leaderboard_only (suite-scoped scores only);
    # the JSON says partial instead when terms of a text query were ignored (see ``to_json``)
    status: str
    message: str
    request: dict[str, object]
    interpretation: str
    canonical_query: str
    operation: dict[str, object] | None
    exact: tuple[CohortResult, ...] = ()
    exact_total: int = 0
    other_protocols: tuple[CohortResult, ...] = ()
    other_protocols_total: int = 0
    compatible: tuple[CohortResult, ...] = ()
    compatible_total: int = 0
    nearest: Nearest | None = None
    gaps: tuple[Gap, ...] = ()
    choices: tuple[Choice, ...] = ()
    notes: tuple[Reason, ...] = ()
    parsed: dict[str, object] | None = None
    catalog_version: int | None = None
    ignored: tuple[tuple[str, str], ...] = ()  # (term, why) for each term of a text query not understood

    def answer(self) -> dict[str, object]:
        """Everything but the text-parse details: equal for a text query and its structured form."""
        return {
            "status": self.status,
            "answer_status": self.status,
            "message": self.message,
            "request": self.request,
            "interpretation": self.interpretation,
            "canonical_query": self.canonical_query,
            "operation": self.operation,
            "exact": [c.to_json() for c in self.exact],
            "exact_total": self.exact_total,
            "other_protocols": [c.to_json() for c in self.other_protocols],
            "other_protocols_total": self.other_protocols_total,
            "compatible": {"total": self.compatible_total, "shown": [c.to_json(rows=False) for c in self.compatible]},
            "nearest": self.nearest.to_json() if self.nearest else None,
            "gaps": [g.to_json() for g in self.gaps],
            "choices": [c.to_json() for c in self.choices],
            "notes": [n.to_json() for n in self.notes],
        }

    def to_json(self) -> dict[str, object]:
        """The answer; with ignored terms its status is ``partial`` (``answer_status`` says what the rest found)."""
        out = {"query": self.parsed, **self.answer(), "catalog_version": self.catalog_version}
        if self.ignored:
            shown = "; ".join(why if term in why else f"'{term}': {why}" for term, why in self.ignored)
            out["status"] = "partial"
            out["message"] = f"Partly understood, ignored: {shown}. {self.message}"
        return out
