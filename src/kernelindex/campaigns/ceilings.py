"""Write src/kernelindex/registry/measured_ceilings.yaml from the shipped runner bundles: per GPU product, the ceiling
table and shortest call of the newest protocol v4 environment measured on it (runner/stream_ceilings.py). Runs of
older protocols, whose environments carry no table, are checked against their GPU's (readmodel/ceiling_checks).

    ki runner campaign ceilings [--check]     # --check: exit 1 if the shipped file is not what it would write
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from kernelindex.domain.manifests import digest_of, parse_manifest_text

ROOT = Path(__file__).resolve().parents[1]
VERIFIED = ROOT / "data" / "verified"
TARGET = ROOT / "registry" / "measured_ceilings.yaml"
HEADER = """# Written by ki runner campaign ceilings from the shipped runner bundles (src/kernelindex/data/verified):
# per GPU product, the ceiling table and shortest call of the newest protocol v4 environment measured on it.
# Do not edit by hand: re-run it after shipping a v4 campaign's bundles.
"""


def newest_tables(verified: Path = VERIFIED) -> dict[str, dict]:
    """GPU product → the newest v4 environment's table (newest: its bundle's latest run), with where it came from."""
    found: dict[str, tuple[str, dict]] = {}
    for folder in sorted(p for p in verified.iterdir() if (p / "manifests.jsonl").exists()):
        text = (folder / "manifests.jsonl").read_bytes()
        manifests: list[Any] = [parse_manifest_text(line) for line in text.splitlines()
                     if line.strip()]
        newest = max((m.spec.observed_at for m in manifests if m.kind == "BenchmarkRun"), default="")
        for env in (m for m in manifests if m.kind == "ExecutionEnvironment" and m.spec.ceiling_table):
            product = env.spec.hardware.product
            entry = {"environment": digest_of(env), "bundle": folder.name, "min_call_ns": env.spec.min_call_ns,
                     "ceilings": [[p.kernel, p.bytes, p.bandwidth_bytes_per_s] for p in env.spec.ceiling_table]}
            if product not in found or str(newest) > found[product][0]:
                found[product] = (str(newest), entry)
    return {product: entry for product, (_, entry) in sorted(found.items())}


def render(tables: dict[str, dict]) -> str:
    return HEADER + yaml.safe_dump({"gpus": tables}, sort_keys=True, width=120, default_flow_style=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render(newest_tables())
    if args.check:
        same = TARGET.read_text() == text
        print("measured_ceilings.yaml is current" if same else "measured_ceilings.yaml is stale: re-run the script")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}: {', '.join(newest_tables()) or 'no v4 environment shipped yet'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
