#!/usr/bin/env bash
# Build the folder that brings FlashInfer 0.7.4 to the GPU machine (issue 45; docs/flashinfer.md): its wheel is 101 MB
# against 64 MiB a call, the checkout's tracked files included, so the carry holds the wheel trimmed to what the batch
# decode and prefill kernels need (bench/flashinfer_trim.py: Python modules, CUDA sources and headers, licenses; one
# .tar.xz) and the cp312 wheel of apache-tvm-ffi, the one dependency the machine lacks for them (torch, ninja, nvcc,
# numpy, einops, tqdm, requests, click, tabulate, packaging, nvidia-ml-py and cuda-bindings are in its image).
# Both downloads are checked against pinned SHA-256 digests. Run from the repository root with the project's venv:
#   bash bench/flashinfer_carry.sh [OUT=.ficarry]
# then call the device with carry [".devcarry", ".ficarry"] and bench/flashinfer_gpu.sh (docs/flashinfer.md).
set -euo pipefail
out=${1:-.ficarry}; cache=${KI_FI_CACHE:-.ficache}; py=${PYTHON:-.venv/bin/python}
FI=flashinfer_python-0.7.4-py3-none-any.whl
FI_SHA=a051a62e09a2738e8b0de47a1944fd2f0f3eff01b728b662141ea660cb09dd32
TVM=apache_tvm_ffi-0.1.15.post2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl
TVM_SHA=059eed9bfc94bcd41650fb8eefde74040a1bc7e7b1a6f0a8ff897b02b118875b
mkdir -p "$cache"
[ -f "$cache/$FI" ] || "$py" -m pip download -q --no-deps -d "$cache" flashinfer-python==0.7.4 2>&1 | grep -v "^WARNING: Location" || true
[ -f "$cache/$TVM" ] || "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 -d "$cache" apache-tvm-ffi==0.1.15.post2 2>&1 \
  | grep -v "^WARNING: Location" || true
echo "$FI_SHA  $cache/$FI" | sha256sum -c --quiet || { echo "$cache/$FI: not the pinned wheel (SHA-256 differs)" >&2; exit 1; }
echo "$TVM_SHA  $cache/$TVM" | sha256sum -c --quiet || { echo "$cache/$TVM: not the pinned wheel (SHA-256 differs)" >&2; exit 1; }
rm -rf "$out"; mkdir -p "$out/whl"
cp "$cache/$TVM" "$out/whl/"
started=$(date +%s)
"$py" bench/flashinfer_trim.py "$cache/$FI" "$out/flashinfer-0.7.4-trim.tar.xz"
echo "trimmed and compressed in $(( $(date +%s) - started )) s"
du -b "$out"/flashinfer-0.7.4-trim.tar.xz "$out"/whl/*.whl | awk '{printf "%8.2f MiB  %s\n", $1 / 1048576, $2}'
du -sb "$out" | awk '{printf "carry %s: %.2f MiB (the tracked tree and .devcarry travel beside it: 64 MiB in all)\n", $2, $1 / 1048576}'
