#!/usr/bin/env bash
# GEMM & attention campaign (issue 25): FlashInfer-Bench's 16 dense GEMM and 18 GQA attention definitions on
# the H200, runner protocol v3. Modelled on bench/h200_v6.sh: a queue of steps run in order within SECONDS;
# each step's bundle and summary go to $OUT as soon as it ends; steps done on this machine are recorded in
# $KI_WORK/done and skipped, so a later call on the still-warm machine resumes the queue.
# Run from the carried folder (src/, bench/, cases/ from bench/gemm_attn_cases.py, keys/, whl/ installed into
# /tmp/site, PYTHONPATH set).
# Usage: bench/h200_gemm_attn.sh SECONDS STEP...
#   OPS:SELECTION:IMPL[:SUFFIX[:LIMIT]]  operations OPS (comma-separated; one process, a bundle each) on the
#                        cases of cases/SELECTION.json (gemm, gemm-compile, attention), implementations IMPL
#                        (comma-separated keys), at most LIMIT s (default 300); bundles h200-OP-DATE-v3SUFFIX
#   gemm-cublas | gemm-xla | attention | attention-flex | gemm-autotune | gemm-triton   a batch: that step for
#                        every operation of its selection, a few operations per process (a process costs ~10 s
#                        to start: torch, CUDA, the ceilings): torch.matmul on gemm; XLA through JAX on
#                        gemm-compile (its own processes, XLA_PYTHON_CLIENT_PREALLOCATE=false); our baseline,
#                        flash-varlen, efficient-varlen and sdpa-cudnn on attention; FlexAttention (compiled per
#                        case) on attention; torch.compile max-autotune / Triton-only templates on gemm-compile
#   reverify             10% of the cases measured so far, in a fresh process, no bundle
# KI_REHEARSAL=--test-device-product=H200: a CPU rehearsal. KI_DRY_RUN=1: each step only prints its plan
# (bench/campaign.py run --plan-only) and is marked done, so a second dry run shows the resume.
set -u
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # only the xla-jax processes import JAX; torch's ignore it
budget=$1; shift; start=$(date +%s); work=${KI_WORK:-/tmp/ki-gemm-attn}; cases=${KI_CASES:-cases}
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work/c" "$OUT"; touch "$work/done"; log="$OUT/run.log"
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
[ -n "${KI_DRY_RUN:-}" ] || nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,\
temperature.gpu,power.draw --format=csv >> "$log" 2>&1
# The SM clock, power and throttle reasons once a second for the whole call ($OUT/clocks.csv), so a step's
# self-check (graph replay vs device time: single-kernel GEMMs replayed 5-10% slower in v9) can be read against
# the clocks it ran at. NVML reads only, from another process; nothing is set.
if [ -z "${KI_DRY_RUN:-}" ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -l 1 >> "$OUT/clocks.csv" 2>&1 & clocks=$!
  trap 'kill $clocks 2>/dev/null' EXIT
fi
say "start $(date -u +%Y-%m-%dT%H:%M:%SZ) (the clock of clocks.csv)"
ship() {  # everything so far, re-packed after every step (at most 8 files come back)
  tar czf "$OUT/bundles.tgz" -C "$work/c" bundles 2>/dev/null
  tar czf "$OUT/summaries.tgz" -C "$work/c" $(cd "$work/c" && ls summary-*.json sample.json 2>/dev/null) 2>/dev/null
}
operations_of() {  # the operations a selection names, sorted, N to a line (comma-separated)
  python3 -c 'import json,sys; o=sorted({o for o, _ in json.load(open(sys.argv[1]))}); n=int(sys.argv[2])
print("\n".join(",".join(o[i:i + n]) for i in range(0, len(o), n)))' "$cases/$1.json" "$2"
}
expand() {  # a batch → its steps; anything else as it is
  case "$1" in
    gemm-cublas) for ops in $(operations_of gemm 4); do echo "$ops:gemm:baseline:-cublas:240"; done;;
    gemm-xla) for ops in $(operations_of gemm-compile 8); do echo "$ops:gemm-compile:xla-jax:-xla:240"; done;;
    attention) for ops in $(operations_of attention 3); do
                 echo "$ops:attention:baseline,flash-varlen,efficient-varlen,sdpa-cudnn::240"; done;;
    attention-flex) for ops in $(operations_of attention 3); do echo "$ops:attention:flex:-flex:300"; done;;
    gemm-autotune) for ops in $(operations_of gemm-compile 2); do
                     echo "$ops:gemm-compile:torch-compile-max-autotune:-autotune:400"; done;;
    gemm-triton) for ops in $(operations_of gemm-compile 2); do echo "$ops:gemm-compile:torch-compile-triton:-triton:400"; done;;
    *) echo "$1";;
  esac
}
steps=(); for arg in "$@"; do while read -r s; do steps+=("$s"); done < <(expand "$arg"); done
# Each run step gets --deadline-s DEADLINE_MARGIN s before its timeout: the runner cuts at the first safe point after
# it (between sample batches and phases) without a signal, since SIGTERM's handler can be reset by a native library
# (rc 143 twice on the H200, fused-moe under torch.compile). The margin: the longest profiled batch seen (~16 s,
# fused-moe experts 64 forward+backward) plus writing the bundle and summary; SIGTERM stays the backstop.
DEADLINE_MARGIN=25
common=(--cases "$cases" --key keys/runner.key --time-budget 0.5 --hard-limit 40 --host-calls 20 --out "$work/c")
for step in "${steps[@]}"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 20 ))
  if [ "$t" -lt 40 ]; then say "stop before $step: $t s left"; break; fi
  if [ "$step" = reverify ]; then
    if [ -n "${KI_DRY_RUN:-}" ]; then say "plan reverify: 10% of the cases measured so far"; rc=0; else
    python3 bench/fidelity.py select --summaries "$work"/c/summary-*.json --every 10 --out "$work/c/sample.json" \
      && timeout --preserve-status -k 15 "$t" python3 bench/campaign.py run "${common[@]}" --label reverify --no-bundle \
        --deadline-s $(( t - DEADLINE_MARGIN )) \
        --only-cases "$work/c/sample.json" ${KI_REHEARSAL:-} \
        --operations "$(python3 -c 'import json,sys; print(",".join(sorted({o for o,_ in json.load(open(sys.argv[1]))})))' "$work/c/sample.json")" \
        >> "$OUT/reverify.log" 2>&1
    rc=$?; fi
  else
    IFS=: read -r ops selection impl suffix limit <<< "$step"
    limit=${limit:-300}; step_s=$(( t < limit ? t : limit )); first=${ops%%,*}; more=$(( $(tr -cd , <<< "$ops" | wc -c) ))
    label="${first}$([ "$more" -gt 0 ] && echo "+$more")${suffix:-}"
    args=("${common[@]}" --label "$label" --operations "$ops" --only-cases "$cases/$selection.json"
          --impl "$impl" --bundle-suffix="-v3${suffix:-}" --deadline-s $(( step_s - DEADLINE_MARGIN )))
    if [ -n "${KI_DRY_RUN:-}" ]; then
      python3 bench/campaign.py run "${args[@]}" --plan-only 2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}
    else
      timeout --preserve-status -k 15 "$step_s" python3 bench/campaign.py run "${args[@]}" ${KI_REHEARSAL:-} \
        >> "$OUT/campaign.log" 2>&1
      rc=$?
    fi
  fi
  say "$step rc=$rc$([ "$rc" -eq 3 ] && echo ' (cut by its limit: the finished cases are in their bundle; the next call measures the rest)')"
  [ "$rc" -eq 0 ] && echo "$step" >> "$work/done"
  ship
done
if [ -z "${KI_DRY_RUN:-}" ] && ls "$work"/c/summary-*-cublas.json > /dev/null 2>&1; then
  # issue 25: cuBLAS at M >= 4096 against the datasheet fp16 dense peak (>= 60%), beside the ceiling GEMM
  python3 bench/v3_tables.py gemm-peak "$work"/c/summary-*-cublas.json 2>&1 | tee -a "$log" "$OUT/gemm-peak.md"
fi
say "end, $(left) s of the script's budget left"
