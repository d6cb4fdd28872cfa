"""Behaviour snapshot: the answers of a wide set of routes (every operation's JSON twin, home,
records, challenges, GPUs, implementation pages, run dossiers of every source incl. verified runner
runs and of every metric (mean latency, peak memory, scores), compare, search, resolve, and a few
HTML pages) on a catalog bootstrapped with the bundled data, under a pinned clock, written as one
JSON file (each answer parsed, and the sha256 of its exact bytes, so key order and spacing count
too). A refactoring that must not change what users see (issue 9: typed read-model data) is checked
by snapshotting before and after and diffing (take both with the same version of this script).

    .venv/bin/python bench/api_snapshot.py snapshot OUT.json [--catalog sqlite:///kept.db]
    .venv/bin/python bench/api_snapshot.py diff BEFORE.json AFTER.json [--deliberate KEY ...]

``--deliberate KEY`` leaves a top-level field of the JSON answers out of the comparison (a field a
change adds on purpose, e.g. ``use``: issue 21 put the operation page's use box in its JSON twin); the
answers that differed only by it are counted apart.

This is a check that prints differences (exit 1 when any), not a timed benchmark.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path

PINNED = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)
# The sources snapshotted (every operation's twin is fetched: with aiter and KernelBench, ~1,300 of them)
SNAPSHOT_PARTS = ("liger", "export", "verified")
QUERIES = ["rope seq=2048 hidden=8192 a100", "rms norm", "embedding h100", "cross entropy", "flash attention"]
RESOLVE = {"operation": "rope", "axes": {"seq": 2048, "hidden": 8192}, "gpu": "a100"}
HTML = ["/", "/operations/rope", "/operations/embedding", "/records", "/challenges", "/gpus"]


def chosen_runs(catalog) -> list[list[str]]:  # noqa: ANN001 - Catalog
    """Three runs of every source, three attested (verified runner) runs, and three of every metric
    other than median latency (mean latency, peak memory, leaderboard scores), first by digest."""
    from sqlalchemy import select

    from kernelindex.catalog.models import AttestationRow, RunRow
    from kernelindex.policy.cohorts import LATENCY_METRIC, run_metric

    with catalog.engine.connect() as conn:
        rows = conn.execute(select(RunRow.source, RunRow.run_id, RunRow.body).order_by(RunRow.digest)).all()
        attested = conn.execute(
            select(RunRow.run_id).join(AttestationRow, AttestationRow.run == RunRow.digest).order_by(RunRow.digest)
        ).scalars().all()
    picked: dict[str, list[str]] = {}
    by_metric: dict[str, list[str]] = {}
    for source, run_id, body in rows:
        if len(picked.setdefault(source, [])) < 3:
            picked[source].append(run_id)
        metric = run_metric(json.loads(body)["spec"])
        if metric != LATENCY_METRIC and len(by_metric.setdefault(metric, [])) < 3:
            by_metric[metric].append(run_id)
    return [*picked.values(), list(attested[:3]), *(by_metric[m] for m in sorted(by_metric))]


def snapshot(out: Path, url: str | None) -> None:
    from fastapi.testclient import TestClient

    from kernelindex.bootstrap import ensure_bundled_data
    from kernelindex.catalog.db import open_catalog
    from kernelindex.web.app import create_app

    with tempfile.TemporaryDirectory() as tmp:
        catalog = open_catalog(url or f"sqlite:///{tmp}/snapshot.db")
        ensure_bundled_data(catalog, parts=SNAPSHOT_PARTS)
        client = TestClient(create_app(catalog, clock=lambda: PINNED))
        answers: dict[str, object] = {}

        def get(path: str, html: bool = False) -> dict:
            response = client.get(path)
            body = response.text if html else response.json()
            exact = sha256(response.content).hexdigest()
            answers[path] = {"status": response.status_code, "bytes": exact, "body": body}
            return body

        def items(path: str) -> list[dict]:
            found, cursor = [], None
            while True:
                page = get(path + (f"?cursor={cursor}" if cursor else ""))
                found += page["items"]
                if not (cursor := page.get("next_cursor")):
                    return found

        api = "/api/v1"
        get(f"{api}/home")
        for op in items(f"{api}/operations"):
            get(f"{api}/operations/{op['slug']}")
            get(f"{api}/operations/{op['slug']}/workloads")
        items(f"{api}/workloads")  # every operation's, in pages (the listing read from stored summaries)
        get(f"{api}/workloads?operation=rope")
        get(f"{api}/workloads?operation=no-such-operation")
        get(f"{api}/records")
        get(f"{api}/challenges")
        for gpu in items(f"{api}/gpus")[:6]:
            get(f"{api}/gpus/{gpu['gpu']['slug']}")
        for impl in items(f"{api}/implementations")[::15]:
            get(f"{api}/implementations/{impl['slug']}")
        groups = chosen_runs(catalog)
        runs = [r for group in groups for r in group]
        for run_id in runs:
            get(f"{api}/runs/{run_id}")
        for group in groups:  # (runs of a score or memory metric answer 500 today: not in data.runs)
            get(f"{api}/compare?" + "&".join(f"run={r}" for r in group[:2]))
        for query in QUERIES:
            get(f"{api}/search?q={query}")
        response = client.post(f"{api}/resolve", json=RESOLVE)
        answers["POST /resolve"] = {"status": response.status_code, "bytes": sha256(response.content).hexdigest(),
                                    "body": response.json()}
        for path in HTML + [f"/runs/{r}" for r in runs[:4]] + [f"/runs/{g[0]}" for g in groups if g]:
            get(path, html=True)
        catalog.engine.dispose()
    out.write_text(json.dumps(answers, indent=1, sort_keys=True))
    print(f"{len(answers)} answers written to {out}")


def _only_by(old: dict | None, new: dict | None, fields: list[str]) -> bool:
    """Whether two answers differ only by the deliberate fields of their bodies (and so their bytes)."""
    if old is None or new is None or not all(isinstance(a.get("body"), dict) for a in (old, new)):
        return False

    def rest(answer: dict) -> dict:
        return {**answer, "bytes": None, "body": {k: v for k, v in answer["body"].items() if k not in fields}}

    return bool(set(fields) & (set(old["body"]) | set(new["body"]))) and rest(old) == rest(new)


def diff(before: Path, after: Path, deliberate: list[str]) -> int:
    old, new = json.loads(before.read_text()), json.loads(after.read_text())
    changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    unexplained = [k for k in changed if not _only_by(old.get(k), new.get(k), deliberate)]
    for key in unexplained:
        print(f"DIFFERS: {key}")
    print(f"{len(old)} before, {len(new)} after, {len(changed)} differ"
          + (f", {len(changed) - len(unexplained)} of them only by {', '.join(deliberate)}" if deliberate else ""))
    return 1 if unexplained else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot")
    snap.add_argument("out", type=Path)
    snap.add_argument("--catalog", help="database URL (default: a fresh temporary SQLite catalog)")
    cmp_ = sub.add_parser("diff")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    cmp_.add_argument("--deliberate", action="append", default=[], metavar="KEY",
                      help="a top-level JSON field added on purpose, left out of the comparison")
    args = parser.parse_args()
    if args.command == "snapshot":
        snapshot(args.out, args.catalog)
    else:
        sys.exit(diff(args.before, args.after, args.deliberate))


if __name__ == "__main__":
    main()
