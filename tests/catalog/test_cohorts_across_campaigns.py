"""Two H200 campaigns on the same platform compete in one cohort even when one left Liger-Kernel out: the
max-autotune GEMMs of runner key 16 (no Liger wheel carried) rank beside runner key 9's cuBLAS runs, and
migration 0010 re-keys a catalog stored by the earlier rule (policy/cohorts.py, IMPLEMENTATION_PACKAGES)."""

from __future__ import annotations

import json

from alembic import command
from sqlalchemy import text

from kernelindex.catalog.db import Catalog, _alembic_config
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

CUBLAS = "h200-gemm-n7168-k5120-20261202-v3-cublas"
AUTOTUNE = "h200-gemm-n7168-k5120-20261203-v3-autotune"


def _publish(catalog: Catalog) -> None:
    bundled_runner_keys(catalog)
    for path in bundled_bundles():
        if path.name in (CUBLAS, AUTOTUNE):
            publish_bundle(catalog, path, actor="test")


def _revision(catalog: Catalog, target: str, upgrade: bool) -> None:
    with catalog.engine.begin() as connection:
        cfg = _alembic_config()
        cfg.attributes["connection"] = connection
        (command.upgrade if upgrade else command.downgrade)(cfg, target)


def _cohorts(catalog: Catalog) -> set[str]:
    with catalog.engine.connect() as conn:
        return {key for (key,) in conn.execute(text("SELECT DISTINCT cohort_key FROM runs"))}


def test_a_campaign_without_liger_ranks_beside_one_with_it(empty_catalog: Catalog) -> None:
    _publish(empty_catalog)
    with empty_catalog.engine.connect() as conn:
        envs = [json.loads(b)["spec"]["software"] for (b,) in
                conn.execute(text("SELECT body FROM objects WHERE kind = 'ExecutionEnvironment'"))]
        runs = conn.execute(text("SELECT count(*) FROM runs")).scalar_one()
    assert sorted("liger-kernel" in sw for sw in envs) == [False, True]  # the two campaigns' records differ
    together = _cohorts(empty_catalog)
    assert runs > len(together)  # cuBLAS and max-autotune share each workload's cohort
    # Stored by the earlier rule (downgrade), the same runs split by campaign; 0010 joins them again.
    _revision(empty_catalog, "0009", upgrade=False)
    apart = _cohorts(empty_catalog)
    assert len(apart) > len(together)
    _revision(empty_catalog, "head", upgrade=True)
    assert _cohorts(empty_catalog) == together
