"""What a reader must know before reading a ranking's ratios: which statistic the cohort ranks (device
time for runner v3, event or graph-replay time before), rows whose call is host-bound on the host that
measured it, and rows whose forward also does the backward's work (``registry.forward_computes_gradient``)."""

from __future__ import annotations

from kernelindex import urls
from kernelindex.policy.device_time import DEVICE_TIME, STREAM_TIME, host_bound_words
from kernelindex.readmodel.cohorts import Cohort
from kernelindex.readmodel.labels import cohort_key_short, workload_key
from kernelindex.readmodel.loading import OperationData, Run
from kernelindex.readmodel.operation_views import RankedRow, RankingNote
from kernelindex.readmodel.region_work import forward_work

FORWARD_BACKWARD = "forward+backward"

_RANKING_WORDS = {
    "forward": ("also {verb} the gradient inside the forward: the time includes work the other rows do in their "
                "backward", ("computes", "compute")),
    "backward": ("only {verb} a gradient computed in the forward: the time leaves out work the other rows do "
                 "here", ("scales", "scale")),
}


def ranking_notes(data: OperationData, cohort: Cohort | None, rows: list[RankedRow],
                  workload_cohorts: list[Cohort]) -> list[RankingNote]:
    """Notes the ranking carries above its rows (empty when nothing needs saying)."""
    if cohort is None:
        return []
    shifted = sorted({r.implementation.title for r in rows if forward_work(data, cohort.run(r.digest))})
    if not shifted:
        return []
    region = data.protocols[cohort.protocol].spec.timed_region
    words, (one, several) = _RANKING_WORDS[region]
    sentence = (f"In this {region} ranking, {', '.join(shifted)} "
                f"{words.format(verb=one if len(shifted) == 1 else several)}, so a ratio against them is not "
                "like for like. Compare forward+backward.")
    return [RankingNote("FORWARD_COMPUTES_GRADIENT", sentence, _fair_cohort_url(data, cohort, workload_cohorts))]


def _fair_cohort_url(data: OperationData, cohort: Cohort, workload_cohorts: list[Cohort]) -> str | None:
    """The same GPU, environment and profile's forward+backward cohort of this workload, when measured."""
    fair = [c for c in workload_cohorts if c.eligible and c.environment == cohort.environment
            and c.native == cohort.native and data.protocols[c.protocol].spec.timed_region == FORWARD_BACKWARD]
    if not fair:
        return None
    best = max(fair, key=lambda c: (len(c.eligible), c.key))
    return urls.cohort(data.slug, workload_key(best.workload), cohort_key_short(best.key))


def ranked_statistic(data: OperationData, cohort: Cohort) -> str:
    """What the cohort's ranking orders by, in words: a cohort never ranks a wall time beside a device time."""
    return _statistic(data, cohort)[1]


def ranked_statistic_short(data: OperationData, cohort: Cohort) -> str:
    """The same in a few words, for a list of cohorts side by side ("median device time", "mean, as reported")."""
    return _statistic(data, cohort)[0]


def _statistic(data: OperationData, cohort: Cohort) -> tuple[str, str]:
    protocol = data.protocols[cohort.protocol].spec
    if protocol.native:
        return (f"{protocol.statistic}, as its source timed it",
                f"{protocol.statistic} time per call, as the source's own harness reported it")
    methods = {r.spec.timing.method for r in cohort.eligible}
    if methods == {STREAM_TIME}:
        eager = any(r.spec.timing.stream and r.spec.timing.stream.capture == "eager" for r in cohort.eligible)
        return ("median stream time", "median stream time per call: K calls back to back over rotating inputs, "
                "in one CUDA graph, per call = replay / K (write-back and gaps between kernels included)"
                + ("; rows marked eager could not be captured and ran the same calls eagerly, their host "
                   "stalls included" if eager else ""))
    if methods == {DEVICE_TIME}:
        return ("median device time", "median device time per call (CUPTI: the durations of the call's kernels, "
                                      "copies and sets; never its wall time)")
    if STREAM_TIME in methods or DEVICE_TIME in methods:  # each runner protocol has its own: a fault, said
        return ("mixed statistics",
                "mixed: stream, device or CUDA event time in one ranking (not comparable; report it)")
    return ("median CUDA-event time", "median time per call between CUDA events, in CUDA graph replays or per "
                                      "call where capture failed (runner v1/v2): not device time")


def host_bound_label(run: Run) -> str | None:
    """The runner's host-bound flag in words, with the wall time, the syncs and the figure (device or stream time)."""
    host, median = run.spec.timing.host, run.spec.timing.median_ns
    if host is None or not host.bound or median is None:
        return None
    figure = "stream time" if run.spec.timing.method == STREAM_TIME else "device time"
    return host_bound_words(host.wall_ns, host.syncs_per_call, median, figure)
