"""The reproduction court (issue 44): a reported run heard against our verified runs of the same thing.

A reported run and the current verified runs of the same implementation line (same version, or the
nearest one, named), the same operation and workload — input generators may differ, and the difference is
named —, the same GPU product and the same timed region are a pair. The court gives the reported figure X,
the reproduced figure Y (the median of the twins' figures), Y/X, the protocol differences that can explain a
gap (read from the two protocols' manifests, never one protocol's words), and a verdict: within 10%, within
2×, or "not reproduced" beyond 2× either way — which takes the reported run out of rankings and records
(``NOT_REPRODUCED``, through ``policy.eligibility``). Pure: the read model gathers the facts.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kernelindex.domain.gpus import GpuDatasheet
from kernelindex.domain.units import format_duration
from kernelindex.policy.reasons import Reason

WITHIN_CLOSE = 1.10  # "within 10%": max(Y/X, X/Y) ≤ 1.10
NOT_REPRODUCED_BEYOND = 2.0  # beyond 2× either way the reported figure is "not reproduced"
VERDICTS = ("within 10%", "within 2×", "not reproduced")
# Workload parameters that say only how inputs are generated: workloads that differ in these alone are one
# workload for the court (KernelBench's get_inputs(): torch.rand, torch.randn, rand_mix of one shape).
GENERATOR_PARAMS = ("inputs drawn by",)
# Recorded differences that can move a figure several-fold: an outlier with none of them is "unexplained". An input
# generator (rand vs randn of one shape) changes values, not the work of a data-independent kernel: it is named
# with every pair but explains no outlier by itself; nor does a side the source left unrecorded.
LARGE_GAP_FIELDS = ("library version", "autograd", "L2 policy")


@dataclass(frozen=True)
class ProtocolFacts:
    """What the court compares of a protocol, from its manifest."""

    harness: str
    statistic: str  # median, mean, … (a runner's median says what it is the median of: stream or device time)
    timer: str
    l2_policy: str
    input_regeneration: str
    grad_mode: str  # "autograd off" or ""
    runner: bool = False  # a KernelIndex runner's protocol (its text says everything it does)


@dataclass(frozen=True)
class Claim:
    """One run the court may hear: a reported run, or a verified run that can be its twin."""

    run: str  # digest
    line: str  # the implementation line (its slug)
    version: str | None  # the implementation's version (None: not recorded)
    workload: str  # the court's workload key: the workload without its input-generator parameters
    generator: str  # how its inputs are generated ("" when the workload does not say)
    gpu: str  # the exact GPU product (a variant not recorded is another product)
    region: str
    value_ns: int
    protocol: ProtocolFacts
    verified: bool  # a current (not superseded) verified run that passed
    source: str = ""  # who reported it (the court hears a source against its own figures on other GPUs)


@dataclass(frozen=True)
class Difference:
    field: str
    theirs: str
    ours: str

    def sentence(self) -> str:
        return f"{self.field}: theirs {self.theirs}; ours {self.ours}"

    @property
    def recorded(self) -> bool:
        """Both sides say what they did: a side the source left unrecorded explains nothing by itself."""
        return not any(_UNRECORDED.search(side) for side in (self.theirs, self.ours))

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "theirs": self.theirs, "ours": self.ours, "sentence": self.sentence()}


_UNRECORDED = re.compile(r"\b(?:not|none) recorded\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reproduction:
    reported: str  # the reported run's digest
    twins: tuple[str, ...]  # the verified runs heard (digests)
    reported_ns: int
    reproduced_ns: int
    version: str  # which version was re-measured, named ("same version 0.5.2", "nearest version …", "…not recorded…")
    differences: tuple[Difference, ...]
    # For a figure not reproduced: the source's own figure of the same call on a GPU its datasheet makes no faster
    # (or no slower) that points the other way, in words; "" when there is none.
    contradiction: str = ""

    @property
    def ratio(self) -> float:
        """Y/X: ours over theirs (above 1: ours is slower)."""
        return self.reproduced_ns / self.reported_ns

    @property
    def distance(self) -> float:
        return max(self.ratio, 1 / self.ratio)

    @property
    def verdict(self) -> str:
        if self.distance <= WITHIN_CLOSE:
            return VERDICTS[0]
        return VERDICTS[1] if self.distance <= NOT_REPRODUCED_BEYOND else VERDICTS[2]

    @property
    def reproduced(self) -> bool:
        return self.verdict != VERDICTS[2]

    @property
    def explanation(self) -> str:
        """For a figure beyond 2×: the differences that can move a figure that far, or "unexplained"."""
        large = [d.sentence() for d in self.differences if d.field in LARGE_GAP_FIELDS and d.recorded]
        found = large + ([self.contradiction] if self.contradiction else [])
        return "; ".join(found) if found else "unexplained"


def court_workload(key: str, params: Mapping[str, object]) -> tuple[str, str]:
    """A workload's court key and its generator: ``key`` (any stable text of its spec without the
    generator parameters) is given by the caller; the generator words are read from ``params``."""
    return key, " ".join(str(params[name]) for name in GENERATOR_PARAMS if name in params)


def generator_words(recipe: str) -> str:
    """The generating functions a recipe calls (``torch.randn``, ``torch.rand``, ``rand_mix``), in order of
    first use; the recipe itself when it names none."""
    found = list(dict.fromkeys(re.findall(r"\b((?:torch\.)?(?:rand\w*|randint|randperm|zeros|ones|full|empty|"
                                          r"arange|tensor))\s*\(", recipe)))
    return ", ".join(found) if found else recipe.strip()


def differences(reported: Claim, twin: Claim) -> tuple[Difference, ...]:
    """The protocol differences between a reported run and its twin that can explain a gap, named."""
    theirs, ours = reported.protocol, twin.protocol
    found: list[Difference] = []
    pairs = (("statistic", theirs.statistic, ours.statistic), ("timer", theirs.timer, ours.timer),
             ("L2 policy", theirs.l2_policy, ours.l2_policy),
             ("input regeneration", theirs.input_regeneration, ours.input_regeneration),
             ("autograd", _grad_words(theirs), _grad_words(ours)),
             ("harness", theirs.harness, ours.harness))
    for name, a, b in pairs:
        if a != b:
            found.append(Difference(name, a or "not recorded", b or "not recorded"))
    if reported.version != twin.version:
        found.append(Difference("library version", reported.version or "not recorded by the source",
                                twin.version or "not recorded"))
    if reported.generator != twin.generator:
        found.append(Difference("input generator", generator_words(reported.generator) or "not recorded",
                                generator_words(twin.generator) or "not recorded"))
    return tuple(found)


def _grad_words(protocol: ProtocolFacts) -> str:
    """A source's own harness that does not say it turns autograd off has not recorded it; a runner's has."""
    if protocol.grad_mode:
        return protocol.grad_mode
    return "as the call leaves it" if protocol.runner else "not recorded"


def _version_key(version: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version or ""))


def _nearest(reported: Claim, twins: list[Claim]) -> tuple[list[Claim], str]:
    """The twins of the reported run's version, else of the nearest version, and the words that name it."""
    same = [t for t in twins if t.version == reported.version]
    if same and reported.version is not None:
        return same, f"same version ({reported.version})"
    versions = sorted({t.version or "" for t in twins})
    if reported.version is None:
        chosen = max(versions, key=lambda v: (_version_key(v), v))
        words = f"the source did not record its version; ours {chosen or 'not recorded'}"
    else:
        target = _version_key(reported.version)
        chosen = min(versions, key=lambda v: (_distance(_version_key(v), target), v))
        words = f"nearest version: theirs {reported.version}, ours {chosen or 'not recorded'}"
    return [t for t in twins if (t.version or "") == chosen], words


def _distance(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    width = max(len(a), len(b))
    a, b = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return tuple(abs(x - y) for x, y in zip(a, b, strict=True))


def _pair_key(claim: Claim) -> tuple[str, str, str, str]:
    return claim.line, claim.workload, claim.gpu, claim.region


def reproductions(claims: Iterable[Claim], datasheets: Mapping[str, GpuDatasheet] | None = None
                  ) -> dict[str, Reproduction]:
    """Every reported run (not verified) that has current verified twins, by the reported run's digest.
    ``datasheets`` (GPU product → its datasheet) lets a figure not reproduced be heard against the source's own
    figures of the same call on other GPUs (``contradiction``)."""
    twins: dict[tuple[str, str, str, str], list[Claim]] = defaultdict(list)
    reported: list[Claim] = []
    for claim in claims:
        (twins[_pair_key(claim)] if claim.verified else reported).append(claim)
    out: dict[str, Reproduction] = {}
    for claim in reported:
        found = twins.get(_pair_key(claim))
        if not found:
            continue
        chosen, version = _nearest(claim, found)
        chosen.sort(key=lambda t: t.run)
        figure = round(statistics.median(t.value_ns for t in chosen))
        court = Reproduction(claim.run, tuple(t.run for t in chosen), claim.value_ns, figure, version,
                             differences(claim, chosen[0]))
        if datasheets and not court.reproduced:
            court = replace(court, contradiction=contradiction(claim, court, reported, datasheets))
        out[claim.run] = court
    return out


def _no_faster(a: GpuDatasheet, b: GpuDatasheet) -> bool:
    """``a`` is no faster than ``b`` on paper: no more bandwidth and no higher peak in any precision both list."""
    shared = a.peaks_tflops.keys() & b.peaks_tflops.keys()
    return bool(shared) and a.bandwidth_gbps <= b.bandwidth_gbps and all(
        a.peaks_tflops[k] <= b.peaks_tflops[k] for k in shared)


def contradiction(claim: Claim, court: Reproduction, reported: Iterable[Claim],
                  datasheets: Mapping[str, GpuDatasheet]) -> str:
    """The source's own figure that contradicts a figure we did not reproduce: where ours is much faster, the same
    source's figure of the same call (implementation line, workload, region) on a GPU no faster on paper that is
    faster than this one; where ours is much slower, its figure on a GPU no slower on paper that is slower. Such a
    figure says the gap lies in this one reported figure, not in the call. "" when the source has none."""
    here = datasheets.get(claim.gpu)
    if here is None:
        return ""
    ours_faster = court.ratio < 1
    found: list[tuple[float, Claim, GpuDatasheet]] = []
    for other in reported:
        sheet = datasheets.get(other.gpu)
        if (other.gpu == claim.gpu or sheet is None or other.source != claim.source
                or _pair_key(other)[:2] != _pair_key(claim)[:2] or other.region != claim.region):
            continue
        if ours_faster and _no_faster(sheet, here) and other.value_ns < claim.value_ns:
            found.append((claim.value_ns / other.value_ns, other, sheet))
        elif not ours_faster and _no_faster(here, sheet) and other.value_ns > claim.value_ns:
            found.append((other.value_ns / claim.value_ns, other, sheet))
    if not found:
        return ""
    _, other, sheet = max(found, key=lambda f: (f[0], f[1].run))
    paper = "no faster" if ours_faster else "no slower"
    way = "faster" if ours_faster else "slower"
    return (f"the source's own figure of this call on the {sheet.short}, a GPU {paper} on paper "
            f"({sheet.bandwidth_gbps:,.0f} against {here.bandwidth_gbps:,.0f} GB/s), is "
            f"{format_duration(other.value_ns, 2)}: {way} than this {format_duration(claim.value_ns, 2)}")


def not_reproduced_reason(reproduction: Reproduction) -> Reason:
    """Why a reported figure beyond 2× of our re-measurement leaves rankings and records."""
    theirs, ours = reproduction.reported_ns, reproduction.reproduced_ns
    return Reason("NOT_REPRODUCED", f"Not reproduced: reported {format_duration(theirs, 3)} ({theirs:,} ns), our "
                  f"verified re-measurement {format_duration(ours, 3)} ({ours:,} ns), {reproduction.ratio:#.3g}× the "
                  "reported figure: more than 2× away, so it stays visible and leaves rankings and records.")
