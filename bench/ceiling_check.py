"""Physics as a check over the whole shipped catalog (issue 42's acceptance): prints, per GPU, how many current
verified runs were held to the bandwidth their runner measured for the same read/write mix and size, the runs whose
implied bandwidth exceeds it by more than 3%, and the verified records among them (the goal: 0). Exit 1 if any
flagged run holds a record. ``ki runner campaign ceiling-check`` prints the same report after a campaign ships.

    .venv/bin/python bench/ceiling_check.py [--database sqlite:///…]   # default: a fresh catalog, a few minutes
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from kernelindex.bootstrap import ensure_bundled_data
from kernelindex.catalog.db import open_catalog
from kernelindex.readmodel.ceiling_report import check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", default="", help="a catalog holding the verified bundles (default: a fresh "
                        "SQLite catalog of Liger and the verified bundles, made first)")
    args = parser.parse_args()
    catalog = open_catalog(args.database or f"sqlite:///{Path(tempfile.mkdtemp()) / 'ceilings.sqlite'}")
    if not args.database:
        ensure_bundled_data(catalog, say=lambda line: None, parts=("liger", "verified"))
    return check(catalog)


if __name__ == "__main__":
    sys.exit(main())
