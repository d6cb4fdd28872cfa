"""Fingerprint of a full import, to show that a change to the import path leaves every stored value and
every report the same: imports every bundled source (as ``ensure_bundled_data(parts=ALL_PARTS)`` does,
through each importer so their reports are kept) into an empty SQLite file and prints the SHA-256 of
each import report, of the catalog export (``catalog/export.py``) and of the typed columns of every
stored run and object (publication times left out). Equal lines before and after = the same catalog.

    PYTHONPATH=src .venv/bin/python bench/import_fingerprint.py [--keep PATH.sqlite]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
from pathlib import Path

from sqlalchemy import select

import kernelindex
from kernelindex.bootstrap import BOOTSTRAP_ACTOR, ensure_bundled_data
from kernelindex.catalog.db import Catalog, open_catalog
from kernelindex.catalog.export import export_lines
from kernelindex.catalog.models import ObjectRow, RunRow
from kernelindex.sources.aiter import import_aiter
from kernelindex.sources.base import FileTransport
from kernelindex.sources.kernelbench import import_kernelbench
from kernelindex.sources.kernelindex_export import bundled_export_path, import_export
from kernelindex.sources.liger import import_liger_files


def _sha(lines: object) -> str:
    digest = hashlib.sha256()
    for line in lines:  # type: ignore[attr-defined]
        digest.update(str(line).encode() + b"\n")
    return digest.hexdigest()[:16]


def _report(report: object) -> str:
    # Locators name the shipped files by path: the package's folder is left out, so two checkouts compare.
    text = json.dumps(report.to_json(), sort_keys=True, default=str)  # type: ignore[attr-defined]
    return text.replace(str(Path(kernelindex.__file__).parent), "<package>")


def import_everything(catalog: Catalog) -> dict[str, str]:
    found = {"liger": _sha(_report(r) for r in import_liger_files(catalog, dry_run=False, actor=BOOTSTRAP_ACTOR))}
    found["export"] = _sha([_report(import_export(catalog, FileTransport(bundled_export_path()), dry_run=False,
                                                  actor=BOOTSTRAP_ACTOR))])
    found["aiter"] = _sha([_report(import_aiter(catalog, dry_run=False, actor=BOOTSTRAP_ACTOR))])
    found["kernelbench"] = _sha([_report(import_kernelbench(catalog, dry_run=False, actor=BOOTSTRAP_ACTOR))])
    found["verified"] = _sha(ensure_bundled_data(catalog, say=lambda line: None, parts=("verified",)))
    return found


def stored(catalog: Catalog) -> dict[str, str]:
    run_columns = [c for c in RunRow.__table__.columns if c.name not in ("published_at", "body")]
    object_columns = [c for c in ObjectRow.__table__.columns if c.name not in ("created_at", "body")]
    with catalog.engine.connect() as conn:
        runs = conn.execute(select(*run_columns).order_by(RunRow.digest))
        objects = conn.execute(select(*object_columns).order_by(ObjectRow.digest))
        return {"export": _sha(export_lines(catalog)), "run columns": _sha(map(tuple, runs)),
                "object columns": _sha(map(tuple, objects))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", help="write the catalog here instead of a temporary file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        catalog = open_catalog(f"sqlite:///{args.keep or os.path.join(scratch, 'fingerprint.sqlite')}")
        found = {f"{name} report": value for name, value in import_everything(catalog).items()} | stored(catalog)
        for name, value in found.items():
            print(f"{name:>18}: {value}")
        catalog.dispose()


if __name__ == "__main__":
    main()
