#!/usr/bin/env bash
# FlashInfer on the GPU machine (issue 45): unpack the carry bench/flashinfer_carry.sh made, build FlashInfer's decode
# and prefill kernel modules once, check them, then run the runner (protocol v4) on the GQA definitions with the
# FlashInfer adapters. Steps run in order within SECONDS; steps done on this machine are recorded in $work/done and
# skipped, so a later call on the still-warm machine resumes (the unpacked package and the kernel cache stay in
# $KI_FI_HOME, a git-ignored folder of the checkout that no call carries). Every step prints what it did and how long
# it took; results land in $OUT (run.log, flashinfer-build.json, bundles.tgz, summaries.tgz, campaign.log).
# Run from the carried campaign folder (.devcarry: src/, bench/, cases-gemm/, keys/; its whl/ installed into
# /tmp/site and PYTHONPATH set, as for bench/gpu_v4.sh).
# Usage: bench/flashinfer_gpu.sh SECONDS STEP...
#   setup                 unpack $KI_FICARRY (default ../.ficarry) into $KI_FI_HOME (default ../.fi) unless done
#   build                 bench/flashinfer_build.py: versions, the modules' build (wall time), one check per layout
#   fi-decode | fi-prefill  the batch: the 11 paged-decode definitions (flashinfer-decode, flashinfer-paged-prefill)
#                         or the 7 ragged-prefill ones (flashinfer-ragged-prefill), 3 definitions a process, the
#                         cases of cases-gemm/attention.json (4 a definition)
#   OPS:IMPL[:LIMIT]      operations OPS (comma-separated) with implementation keys IMPL, at most LIMIT s (300)
# KI_DRY_RUN=1: nothing is unpacked, built or measured; each step prints its plan (campaign.py run --plan-only).
set -u
budget=$1; shift; start=$(date +%s); work=${KI_WORK:-/tmp/ki-fi}
fi_home=$(realpath -m "${KI_FI_HOME:-../.fi}"); carry=$(realpath -m "${KI_FICARRY:-../.ficarry}")
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work/c" "${OUT:=/tmp/ki-fi-out}"; touch "$work/done"; log="$OUT/run.log"
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in *H100*) tag=${KI_GPU_TAG:-h100}; KI_KEY=${KI_KEY:-keys-h100/runner.key};; *) tag=${KI_GPU_TAG:-h200};; esac
say "gpu ${gpu:-none} (tag $tag), FlashInfer home $fi_home, carry $carry"
export PYTHONPATH="$fi_home/site${PYTHONPATH:+:$PYTHONPATH}" FLASHINFER_WORKSPACE_BASE="$fi_home/ws"
# One kernel target for both GPUs of the lane (H100 and H200 are sm_90a): one cache path, built once.
export FLASHINFER_CUDA_ARCH_LIST=${FLASHINFER_CUDA_ARCH_LIST:-9.0a} MAX_JOBS=${MAX_JOBS:-$(nproc)}
export KI_PROBE_CACHE="$work/probe.json"
ship() {
  tar czf "$OUT/bundles.tgz" -C "$work/c" --exclude='bundles/.*' bundles 2>/dev/null
  tar czf "$OUT/summaries.tgz" -C "$work/c" $(cd "$work/c" && ls summary-*.json cut-*.json 2>/dev/null) 2>/dev/null
}
ops_of() {  # the operations of cases-gemm/attention.json whose slug starts with $1, N to a line
  python3 -c 'import json,sys; o=sorted({o for o, _ in json.load(open(sys.argv[1])) if o.startswith(sys.argv[2])})
n=int(sys.argv[3]); print("\n".join(",".join(o[i:i + n]) for i in range(0, len(o), n)))' \
    cases-gemm/attention.json "$1" "$2"
}
expand() {
  case "$1" in
    fi-decode) for ops in $(ops_of gqa-paged-decode- 3); do echo "$ops:flashinfer-decode,flashinfer-paged-prefill:300"; done;;
    fi-prefill) for ops in $(ops_of gqa-ragged-prefill- 3); do echo "$ops:flashinfer-ragged-prefill:300"; done;;
    *) echo "$1";;
  esac
}
setup() {
  local tarball; tarball=$(ls "$carry"/flashinfer-*-trim.tar.xz 2>/dev/null | head -1)
  [ -n "$tarball" ] || { say "no flashinfer-*-trim.tar.xz in $carry: carry it (bench/flashinfer_carry.sh)"; return 2; }
  local digest; digest=$(sha256sum "$tarball" | cut -c1-16)
  if [ -f "$fi_home/site/.carried-$digest" ]; then say "setup: $fi_home/site already holds this carry ($digest)"; return 0; fi
  rm -rf "$fi_home/site"; mkdir -p "$fi_home/site"
  tar -xJf "$tarball" -C "$fi_home/site" &&
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$fi_home/site" "$carry"/whl/*.whl &&
    touch "$fi_home/site/.carried-$digest" || return 1
  # Kernels another machine of the lane built (its build step's $OUT/flashinfer-kernels-sm90a.tar.xz, carried back
  # in $carry): both GPUs are sm_90a, so FlashInfer loads them from its cache instead of compiling.
  if [ -f "$carry/flashinfer-kernels-sm90a.tar.xz" ]; then
    mkdir -p "$fi_home/ws" && tar -xJf "$carry/flashinfer-kernels-sm90a.tar.xz" -C "$fi_home/ws" &&
      say "setup: $(tar -tJf "$carry/flashinfer-kernels-sm90a.tar.xz" | grep -c '\.so$') prebuilt kernel modules placed in the cache"
  fi
  say "setup: unpacked $(du -sh --apparent-size "$fi_home/site" | cut -f1) into $fi_home/site"
  python3 -c 'import flashinfer, tvm_ffi; print("flashinfer", flashinfer.__version__, "tvm_ffi", tvm_ffi.__version__)' 2>&1 | tee -a "$log"
}
common=(--cases cases-gemm --only-cases cases-gemm/attention.json --key "${KI_KEY:-keys/runner.key}" --time-budget 0.5
        --host-calls 20 --min-samples 50 --gpu-tag "$tag" --out "$work/c" --hard-limit 40)
steps=(); for arg in "$@"; do while read -r s; do steps+=("$s"); done < <(expand "$arg"); done
for step in "${steps[@]}"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 20 ))
  if [ "$t" -lt 40 ]; then say "stop before $step: $t s left"; break; fi
  case "$step" in
    setup) if [ -n "${KI_DRY_RUN:-}" ]; then say "plan setup: unpack $carry into $fi_home/site"; rc=0; else setup; rc=$?; fi;;
    build)
      if [ -n "${KI_DRY_RUN:-}" ]; then python3 bench/flashinfer_build.py --print-plan | tee -a "$log"; rc=${PIPESTATUS[0]}
      else timeout --preserve-status -k 15 "$t" python3 bench/flashinfer_build.py --out "$OUT/flashinfer-build.json" \
             2>&1 | tee -a "$OUT/build.log" | grep -v "^\[\|INFO" | tee -a "$log"; rc=${PIPESTATUS[0]}
           # The built modules, for the lane's other GPU (carry it in .ficarry there: no compile on that machine).
           (cd "$fi_home/ws" && find . -name '*.so' | tar -cJf "$OUT/flashinfer-kernels-sm90a.tar.xz" -T -) &&
             say "build: kernels for the other GPU: $(du -b "$OUT/flashinfer-kernels-sm90a.tar.xz" | cut -f1) bytes"; fi;;
    *)
      IFS=: read -r ops impl limit <<< "$step"
      limit=${limit:-300}; step_s=$(( t < limit ? t : limit ))
      args=("${common[@]}" --label "fi-${ops%%,*}" --operations "$ops" --impl "$impl" --bundle-suffix=-v4-flashinfer
            --deadline-s $(( step_s - 25 )))
      if [ -n "${KI_DRY_RUN:-}" ]; then
        python3 -m kernelindex.campaigns.measure run "${args[@]}" --plan-only 2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}
      else
        timeout --preserve-status -k 15 "$step_s" python3 -m kernelindex.campaigns.measure run "${args[@]}" >> "$OUT/campaign.log" 2>&1
        rc=$?
        python3 bench/flashinfer_summary.py "$work/c" 2>&1 | tail -n 40 | tee -a "$log"
      fi;;
  esac
  say "$step rc=$rc$([ "$rc" -eq 3 ] && echo ' (cut by its limit: finished cases are in its bundle)')"
  [ "$rc" -eq 0 ] && echo "$step" >> "$work/done"
  ship
done
say "end, $(left) s of the script's budget left"
