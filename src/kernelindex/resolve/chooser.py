"""When the words name several operations: narrow them with what else the query says, pick the one
the evidence singles out (saying why), or offer a chooser ordered by evidence on the GPU asked for.

FlashInfer-Bench defines one operation per fixed shape family (``gqa-paged-decode-h32-kv8-d128-ps1``:
32 query heads, 8 KV heads, head dim 128, page size 1 as constants), so "gqa paged decode b200"
names eleven operations that differ only in their constants: binding them (``num_qo_heads=32``)
picks one; otherwise the chooser says which constants tell them apart."""

from __future__ import annotations

from collections.abc import Sequence

from kernelindex import registry
from kernelindex.policy.reasons import Reason
from kernelindex.resolve.cohorts import CohortSource, OperationEvidence
from kernelindex.resolve.interpret import canonical_query
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.results import Choice, Resolution
from kernelindex.resolve.vocabulary import OperationEntry, Vocabulary
from kernelindex.resolve.words import dtype_matches, is_narrow, spelled_for

MAX_UNNAMED = 40  # choices listed when the query names no operation (an empty query's page browses by family)


def _fits(op: OperationEntry | None, axes: dict[str, int]) -> bool:
    """The operation has every bound axis (in its own spelling: ``batch`` is FlashInfer's ``batch_size``),
    and each of its constants among them has the bound value."""
    if op is None:
        return not axes
    return all((axis := spelled_for(name, op.axes)) and op.constants.get(axis, value) == value
               for name, value in axes.items())


def _constants_bound(op: OperationEntry | None, axes: dict[str, int]) -> int:
    """How many bound axes the operation fixes to exactly the bound value (gemm-n4096-k4096 for n=4096 k=4096,
    where a GEMM that only has n and k as variables fixes none)."""
    return sum(1 for name, value in axes.items() if op and op.constants.get(spelled_for(name, op.axes) or "") == value)


def dtype_fit(op: OperationEntry | None, dtype: str | None) -> int:
    """2: the definition fixes the precision asked for; 1: it leaves it to the workload, or (no precision
    asked) it is not a narrow one; 0: it fixes another (or, no precision asked, an fp8/int8/fp4 one)."""
    fixed = op.dtypes if op else frozenset()
    if dtype:
        return 2 if dtype_matches(dtype, fixed) else 1 if not fixed else 0
    return 0 if is_narrow(fixed) else 1


def shortlist(req: ResolveRequest, vocab: Vocabulary, candidates: Sequence[str]) -> list[str]:
    """The candidates the rest of the query allows, best first by what it binds: those with every bound
    axis; of them, those fixing the most bound axes as constants; of them, with a precision asked for, those
    that may have it; ordered by how well their precision fits (plain before narrow when none is asked)."""
    axes = dict(req.axes)
    fitting = [s for s in candidates if _fits(vocab.operations.get(s), axes)]
    if axes and fitting:
        most = max(_constants_bound(vocab.operations.get(s), axes) for s in fitting)
        fitting = [s for s in fitting if _constants_bound(vocab.operations.get(s), axes) == most]
    fit = {s: dtype_fit(vocab.operations.get(s), req.dtype) for s in fitting}
    if req.dtype and any(fit.values()):
        fitting = [s for s in fitting if fit[s]]
    return sorted(fitting, key=lambda s: -fit[s])


def _on_gpu(evidence: OperationEvidence | None, gpu: str) -> int:
    """Evidence on the GPU: eligible workload runs, and suite-scoped leaderboard scores (GPU MODE's
    only H100 data), each counted where the GPU may be the one asked for."""
    return _runs_on_gpu(evidence, gpu) + _scores_on_gpu(evidence, gpu)


def _runs_on_gpu(evidence: OperationEvidence | None, gpu: str) -> int:
    return sum(n for observed, n in evidence.gpu_runs if registry.gpu_may_be(gpu, observed)) if evidence else 0


def _scores_on_gpu(evidence: OperationEvidence | None, gpu: str) -> int:
    return sum(s.runs for s in evidence.scores if registry.gpu_may_be(gpu, s.gpu)) if evidence else 0


def narrow_candidates(req: ResolveRequest, source: CohortSource, vocab: Vocabulary,
                      candidates: Sequence[str]) -> tuple[str, Reason] | None:
    """The one candidate the query singles out, with the note saying why; None when none or several
    remain (the chooser then lists them)."""
    if len(candidates) < 2:
        return None
    fitting = shortlist(req, vocab, candidates)
    if (req.axes or req.dtype) and len(fitting) == 1:
        bound = ", ".join([f"{k} {v}" for k, v in req.axes.items()] + [f"dtype {req.dtype}"] * bool(req.dtype))
        return fitting[0], Reason("OPERATION_PICKED_BY_AXES", (
            f"'{fitting[0]}' is the only one of {len(candidates)} matching operations with {bound}."))
    if req.gpu and len(fitting) > 1:
        evidence = source.evidence(fitting)
        with_runs = [s for s in fitting if _on_gpu(evidence.get(s), req.gpu)]
        if len(with_runs) == 1:
            gpu = vocab.gpus.get(req.gpu)
            label = gpu.short if gpu else req.gpu
            return with_runs[0], Reason("OPERATION_PICKED_BY_GPU_EVIDENCE", (
                f"'{with_runs[0]}' is the only one of {len(fitting)} matching operations with runs on {label} "
                f"(eligible runs or leaderboard scores); the others: "
                f"{', '.join(s for s in fitting if s != with_runs[0])}."))
    return None


def _differing_constants(ops: list[OperationEntry]) -> list[str]:
    """The constants that tell look-alike definitions apart (FlashInfer-Bench's one definition per head
    configuration); none when the candidates have different axes ("gemm" names ~700 operations of several
    semantics: a list of every constant any of them fixes would not help choose)."""
    if len({frozenset(op.axes) for op in ops}) > 1:
        return []
    names = sorted({n for op in ops for n in op.constants})
    return [n for n in names if len({op.constants.get(n) for op in ops}) > 1]


def choose(req: ResolveRequest, source: CohortSource, vocab: Vocabulary, candidates: Sequence[str],
           base: dict, *, suggested: bool = False) -> Resolution:
    """The chooser: candidates that fit the bound axes and precision (``shortlist``), the best fitting
    precision first, then those with runs on the GPU asked for. ``suggested``: the candidates are close
    spellings of a word that named nothing, offered in the order of their closeness."""
    known = set(source.operations())
    fitting = shortlist(req, vocab, candidates) or list(candidates)
    pool = fitting or sorted(known | set(vocab.operations))
    evidence = source.evidence([s for s in pool if s in known])  # stored summaries: no candidate's runs loaded
    counts = {slug: e.eligible_runs if (e := evidence.get(slug)) else 0 for slug in pool}
    on_gpu = {slug: _on_gpu(evidence.get(slug), req.gpu) if req.gpu and slug in known else None for slug in pool}
    fit = {slug: dtype_fit(vocab.operations.get(slug), req.dtype) for slug in pool}
    slugs = list(pool) if suggested else \
        sorted(pool, key=lambda s: (-fit[s], -(on_gpu[s] or 0), -counts[s], s)) if candidates or req.gpu else \
        sorted(pool, key=lambda s: (-counts[s], s))
    choices = []
    listed = slugs if candidates else slugs[:MAX_UNNAMED]  # a query naming nothing ("kernel") lists no 1,295 rows
    for slug in listed:
        op = vocab.operations.get(slug)
        query = canonical_query(req.model_copy(update={"operation": slug}), vocab)
        scores = _scores_on_gpu(evidence.get(slug), req.gpu) if on_gpu[slug] is not None and req.gpu else None
        choices.append(Choice(slug, op.title if op else slug, op.family if op else "", counts.get(slug, 0), query,
                              on_gpu[slug], dict(op.constants) if op else {}, scores))
    if not candidates:
        more = (f" The {len(listed)} with the most runs{' on the GPU asked for' if req.gpu else ''} of the "
                f"{len(slugs):,} operations are listed." if len(listed) < len(slugs) else "")
        return Resolution(status="no_operation", operation=None, choices=tuple(choices),
                          message="No operation named; pick one (or add an operation name to the query)." + more,
                          **base)
    message = (f"No operation is called that; {len(slugs)} close spelling(s) of it, closest first: pick one."
               if suggested else _choose_message(req, vocab, slugs, on_gpu))
    return Resolution(status="choose_operation", operation=None, choices=tuple(choices), message=message,
                      **_named_by_words(base, len(slugs)))


def _named_by_words(base: dict, count: int) -> dict:
    """A chooser's request names no operation, so its own interpretation would read "Any operation" and its
    canonical query would list every operation: say the words that named the candidates instead, and keep
    them in the query (they parse back to the same candidates)."""
    tokens = (base.get("parsed") or {}).get("tokens") or []
    words = " ".join(str(t["text"]) for t in tokens if t.get("kind") == "operation")
    if not words:
        return base
    rest = str(base["interpretation"]).removeprefix("Any operation")
    return {**base, "interpretation": f"{count:,} operations named '{words}'{rest}",
            "canonical_query": " ".join(filter(None, (words, str(base["canonical_query"]))))}


def _example(ops: list[OperationEntry], differ: list[str]) -> str:
    """", e.g. n=1 m=2": those constants as the first candidate that has any of them fixes them (the first
    listed may fix none: "gemm h100" lists GPU MODE's matmul first); "" when none has one."""
    op = next((o for o in ops if any(n in o.constants for n in differ)), None)
    return f", e.g. {' '.join(f'{n}={op.constants[n]}' for n in differ if n in op.constants)}" if op else ""


def _choose_message(req: ResolveRequest, vocab: Vocabulary, slugs: list[str], on_gpu: dict[str, int | None]) -> str:
    ops = [op for s in slugs if (op := vocab.operations.get(s))]
    message = f"{len(slugs)} operations match; pick one."
    if differ := _differing_constants(ops):
        message = (f"{len(slugs)} operations match; they fix different {', '.join(differ)} (constants of each "
                   f"definition). Pick one, or bind them{_example(ops, differ)}.")
    if req.gpu:
        gpu = vocab.gpus.get(req.gpu)
        label = gpu.short if gpu else req.gpu
        with_runs = sum(1 for s in slugs if on_gpu.get(s))
        message += (f" {with_runs} of them have runs on {label} (listed first)." if with_runs
                    else f" None of them has runs on {label}.")
    return message
