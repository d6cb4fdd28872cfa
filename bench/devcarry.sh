#!/usr/bin/env bash
# Build the folder a device campaign carries to the H200 machine (bench/RESULTS.md, "Next session's device plan"):
# the package sources without the data the runner never reads, bench/, the cp312 wheels of what the runner imports
# that the machine lacks (it has torch, triton, numpy, … but not pydantic, SQLAlchemy or cryptography, and no
# internet), the runner key pair, and the case lists of the three campaigns. Run from the repository root with the
# project's venv (.venv) built:   bash bench/devcarry.sh .keys/runner11 [OUT=.devcarry]
# Then check each campaign on the CPU with KI_DRY_RUN=1 (RESULTS.md) and call the device with carry [".devcarry"].
set -euo pipefail
keys=${1:?usage: bench/devcarry.sh KEY_DIR [OUT]}; out=${2:-.devcarry}
[ -f "$keys/runner.key" ] && [ -f "$keys/runner.pub" ] || { echo "no runner.key/runner.pub in $keys (ki runner keygen --out $keys --name …)" >&2; exit 2; }
py=.venv/bin/python; export PYTHONPATH=$PWD/src
rm -rf "$out"; mkdir -p "$out/whl" "$out/keys"
# Versions pinned to what the runner was last run with on the machine's Python 3.12; orjson since campaign v8.
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$out/whl" \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types typing-inspection==0.4.5 rfc8785==0.1.4 cryptography==50.0.2 \
  cffi pycparser liger-kernel==0.8.5 alembic SQLAlchemy greenlet Mako platformdirs orjson 2>&1 | grep -v "^WARNING: Location" || true
wheels=$(ls "$out/whl" | wc -l); [ "$wheels" -eq 15 ] || { echo "expected 15 wheels, got $wheels" >&2; exit 1; }
cp -r src bench "$out/"
rm -rf "$out"/src/kernelindex/data/{aiter,kernelbench,verified,kernelindex_export,supersessions.jsonl}
find "$out" -name __pycache__ -prune -exec rm -rf {} +
cp "$keys/runner.key" "$keys/runner.pub" "$out/keys/"
"$py" bench/campaign.py prepare-bundles $(ls -d src/kernelindex/data/verified/* | grep -v independent) --out "$out/cases"
"$py" bench/gemm_attn_cases.py --out "$out/cases-gemm"
"$py" bench/kernelbench_campaign.py prepare --out "$out/bench/kernelbench-cases.json"
du -sh "$out"
