"""New signed bundles for ``bench/load.py``'s publishing loop: each one holds runs the catalog has
never seen, so each upload is a real publication (rows written, the catalog version bumped, caches
invalidated), not a no-op re-publication.

    .venv/bin/python bench/new_bundles.py prepare --database URL --count 30 --out DIR
    .venv/bin/python bench/new_bundles.py upload --server http://127.0.0.1:PORT --every 10 --until EPOCH DIR

``prepare`` makes a bench runner key, trusts it in the catalog (``ki runner trust`` does the same),
makes an API key with scope ``bundles:write`` (``ki keys create``), and writes ``--count`` bundles:
the runs of the shipped runner bundles, one operation per bundle in turn, each run re-signed by the
bench key with its observed time moved back by the bundle's number and the preparation's time (so
every bundle's runs are new digests, and none is dated later than the server's clock allows).
Everything costly (signing, hashing) happens here, before the timed window.

``upload`` posts one bundle every ``--every`` seconds to ``POST /api/v1/bundles`` (as ``ki publish
--server`` and ``ki runner work`` do: the server verifies and publishes it) until ``--until`` (Unix
time) or the bundles run out. After each 201 it reads the bundle's operation page (its JSON twin) every
50 ms until it counts more eligible runs than just before the upload: the time from the publication's
answer to its runs showing there. Then it prints ``published N refused M``, each upload's seconds and
each of those times (``null``: not shown within 30 s).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timedelta
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select

from kernelindex.catalog.db import open_catalog
from kernelindex.catalog.models import ObjectRow
from kernelindex.catalog.publish import publish_manifests
from kernelindex.domain.manifests import manifest_json, parse_manifest
from kernelindex.trust import api_keys
from kernelindex.trust import keys as runner_keys
from kernelindex.trust.bundles import SAMPLES_DIR, bundled_bundles, verify_directory, write_bundle
from kernelindex.trust.uploads import pack_bundle

RUNNER = "bench-load-runner"
TOKEN_FILE = "api-token"
OPERATIONS_FILE = "operations.json"  # each bundle's operation slug, whose page shows its runs
VISIBLE_WITHIN_S = 20.0  # how long after the window a published run is waited for on its operation's page


def prepare(database: str, count: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    private, _, key = runner_keys.generate(RUNNER, out / "key", overwrite=True)
    catalog = open_catalog(database, migrate_schema=False)
    publish_manifests(catalog, [key.trusted_runner_manifest(trusted_by="bench/load.py")], actor="bench/load.py",
                      source="ki runner trust")
    _, token = api_keys.create_key(catalog, name=f"bench-load-{int(time.time())}", scope="bundles:write",
                                   created_by="bench/load.py")
    catalog.dispose()
    (out / TOKEN_FILE).write_text(token)
    shipped = sorted(p for p in bundled_bundles() if not p.name.endswith("independent-check"))
    signer = runner_keys.load_private_key(private)
    stamp = int(time.time()) % 1_000_000  # about 11 days: earlier preparations' digests are not repeated
    operations = {}
    for number in range(count):
        name = f"bundle-{number:03d}"
        operations[name] = _resigned(shipped[number % len(shipped)], out / name, signer, stamp + number)
    (out / OPERATIONS_FILE).write_text(json.dumps(_slugs(database, operations)))


def _slugs(database: str, digests: dict[str, str]) -> dict[str, str]:
    """Each bundle's operation slug, from the digest its implementation names."""
    catalog = open_catalog(database, migrate_schema=False)
    with catalog.engine.connect() as conn:
        names = dict(conn.execute(select(ObjectRow.digest, ObjectRow.name)
                                  .where(ObjectRow.digest.in_(sorted(set(digests.values()))))).tuples().all())
    catalog.dispose()
    return {bundle: names[digest] for bundle, digest in digests.items() if digest in names}


def _resigned(source: Path, out: Path, signer: Ed25519PrivateKey, shift: int) -> str:
    """The runs of a shipped bundle signed by the bench key, observed ``shift`` seconds earlier: new digests
    (a later time would be refused once it passes the server's clock) and new external ids (a bundle may not
    reuse a stored run's)."""
    bundle = verify_directory(source)
    key_id = runner_keys.key_id_of(runner_keys.public_key_hex(signer))
    manifests = []
    for manifest in bundle.manifests:
        data = manifest_json(manifest)
        if data["kind"] == "BenchmarkRun":
            observed = datetime.fromisoformat(data["spec"]["observed_at"].replace("Z", "+00:00"))
            moved = (observed - timedelta(seconds=shift)).strftime("%Y-%m-%dT%H:%M:%SZ")
            source_ref = data["spec"]["source"]  # one external id, one run: the moved run is a new measurement
            source_ref = {**source_ref, "external_id": f"bench-load-{shift}/{source_ref['external_id']}"}
            data = {**data, "spec": {**data["spec"], "runner": {"name": RUNNER, "key_id": key_id},
                                     "observed_at": moved, "source": source_ref}}
        manifests.append(parse_manifest(data, "bench"))
    samples = [p.read_bytes() for p in sorted((source / SAMPLES_DIR).iterdir())] if (source / SAMPLES_DIR).is_dir() \
        else []
    write_bundle(out, manifests, samples, key=signer, runner_name=RUNNER)
    return next((manifest_json(m)["spec"]["operation"] for m in bundle.manifests if m.kind == "ImplementationRevision"),
                "")


def upload(server: str, every: float, until: float, folder: Path) -> None:
    token = (folder / TOKEN_FILE).read_text().strip()
    operations = json.loads((folder / OPERATIONS_FILE).read_text())
    bundles = sorted(p for p in folder.glob("bundle-*") if p.is_dir())
    published, refused, seconds, visible = 0, 0, [], []
    headers = {"authorization": f"Bearer {token}", "content-type": "application/gzip"}
    next_at = time.time()
    with httpx.Client(base_url=server, timeout=120) as client:
        for bundle in bundles:
            if next_at >= until:
                break
            time.sleep(max(0.0, next_at - time.time()))
            page = f"/api/v1/operations/{operations[bundle.name]}" if bundle.name in operations else None
            before = _eligible_runs(client, page) if page else 0
            started = time.perf_counter()
            response = client.post("/api/v1/bundles", content=pack_bundle(bundle), headers=headers)
            seconds.append(round(time.perf_counter() - started, 2))
            bundle.rename(bundle.with_name(f"sent-{bundle.name}"))  # a later row uploads the next ones
            if response.status_code == 201:
                published += 1
            if response.status_code == 201 and page:
                visible.append(_visible_after(client, page, before, min(until + VISIBLE_WITHIN_S, time.time() + 30)))
            elif response.status_code != 201:
                refused += 1
                print(f"refused {bundle.name}: {response.status_code} {response.text[:300]}", flush=True)
            next_at += every
    print(f"published {published} refused {refused} upload_s {json.dumps(seconds)} visible_s {json.dumps(visible)}",
          flush=True)


def _eligible_runs(client: httpx.Client, page: str) -> int:
    return int(client.get(page).json()["eligible_runs"])


def _visible_after(client: httpx.Client, page: str, before: int, deadline: float) -> float | None:
    """Seconds from the upload's answer until the operation's page counts more eligible runs than before it
    (asked every 50 ms, as a reader would see it); None when it did not by ``deadline``."""
    answered = time.perf_counter()
    while time.time() < deadline:
        if _eligible_runs(client, page) > before:
            return round(time.perf_counter() - answered, 2)
        time.sleep(0.05)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("prepare")
    make.add_argument("--database", required=True)
    make.add_argument("--count", type=int, default=30)
    make.add_argument("--out", type=Path, required=True)
    send = sub.add_parser("upload")
    send.add_argument("--server", required=True)
    send.add_argument("--every", type=float, default=10.0)
    send.add_argument("--until", type=float, required=True)
    send.add_argument("folder", type=Path)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.database, args.count, args.out)
    else:
        upload(args.server, args.every, args.until, args.folder)


if __name__ == "__main__":
    main()
