"""Cohort keys that earlier keying rules gave (``policy.cohorts.former_cohort_keys``), mapped to each cohort's
key now, over the whole catalog: what a page listing cohorts of every operation (the records ledger) reads to
send an old ``?cohort=`` link to the same cohort (issue 46 item 7). The operation page finds a moved key among
its loaded cohorts (``operation_select.moved_cohort``); the ledger has only the stored summaries, so this table
is computed from the runs' (workload, protocol, environment, key) — no run body is read — once per catalog
version, and only when a key names no cohort now."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import select

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.domain.canonical import short_digest
from kernelindex.policy.cohorts import LATENCY_METRIC, MEAN_LATENCY_METRIC, cohort_key, environment_key
from kernelindex.policy.cohorts import former_cohort_keys as former_keys
from kernelindex.readmodel.cache import kept

_RANKED_METRICS = (LATENCY_METRIC, MEAN_LATENCY_METRIC)  # the cohorts the ledger lists (memory and scores: none)


def current_cohort_key(catalog: Catalog, requested: str) -> str | None:
    """The short key (12 hex digits) a cohort has now that an earlier rule keyed ``requested`` (short or full),
    or None when no cohort was ever keyed so. Short keys are kept as integers: ~130,000 of them."""
    short = short_digest(requested)
    try:
        wanted = int(short, 16)
    except ValueError:
        return None
    found = kept(catalog, "cohort-aliases", (), lambda: _aliases(catalog), long_lived=True).get(wanted)
    return None if found is None else f"{found:012x}"


def _aliases(catalog: Catalog) -> dict[int, int]:
    with catalog.engine.connect() as conn:
        environments = {digest: orjson.loads(body)["spec"] for digest, body in conn.execute(
            select(ObjectRow.digest, ObjectRow.body).where(ObjectRow.kind == "ExecutionEnvironment"))}
        cohorts = conn.execute(select(RunRow.workload, RunRow.protocol, RunRow.environment, RunRow.cohort_key)
                               .distinct()).all()
    keys = {digest: environment_key(spec) for digest, spec in environments.items()}
    table: dict[int, int] = {}
    for workload, protocol, environment, key in cohorts:
        spec: dict[str, Any] | None = environments.get(environment)
        metric = next((m for m in _RANKED_METRICS if spec is not None
                       and cohort_key(workload, protocol, keys[environment], m) == key), None)
        if spec is None or metric is None:
            continue
        now = int(short_digest(key), 16)
        for former in former_keys(workload, protocol, spec, environment, metric):
            table.setdefault(int(short_digest(former), 16), now)
    return table
