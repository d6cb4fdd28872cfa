#!/usr/bin/env bash
# Runner protocol v4 campaign (issue 42): stream time ranks. A queue of steps run in order within SECONDS on the GPU
# machine, each step's results in $OUT as soon as it ends; steps done on this machine are recorded in $work/done and
# skipped, so a later call on the still-warm machine continues where the earlier one stopped (a fresh machine starts
# again: list only the steps not yet shipped). Cut and resume as bench/h200_v6.sh (runner/step_limit.py).
# Run from the carried folder (src/, bench/, cases/, keys/, whl/ installed into /tmp/site, PYTHONPATH set).
# Usage: bench/gpu_v4.sh SECONDS STEP...
#   OP[:SKIP:MAX[:SUFFIX[:REGIONS[:LIMIT[:HARD]]]]]  one operation's cases SKIP+1 … SKIP+MAX (MAX 0: all), only
#                        REGIONS, at most LIMIT s (default 300), HARD s per case-region (default 40); its bundle is
#                        GPU-OP-DATE-v4SUFFIX (GPU: KI_GPU_TAG, default h100 or h200 as nvidia-smi names it)
#   probe                the GPU's v4 ceilings (read, write, copy at 7 sizes) and shortest call: $OUT/probe.json;
#                        every later step of this machine reuses it (KI_PROBE_CACHE), so all bundles of one machine
#                        share one environment
#   compare              bench/stream_compare.py over KI_COMPARE (the figures of docs/runner.md's table)
# KI_KEY: the runner key (default keys/runner.key). KI_REHEARSAL=--test-device-product=H200: a CPU rehearsal. KI_DRY_RUN=1: each step only prints its plan.
set -u
budget=$1; shift; start=$(date +%s); work=${KI_WORK:-/tmp/ki-v4}
# The GPU the machine has (a call for one kind may run on the other): its tag names the bundles, its key signs them.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in *H100*) tag=${KI_GPU_TAG:-h100}; KI_KEY=${KI_KEY:-keys-h100/runner.key};; *) tag=${KI_GPU_TAG:-h200};; esac
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work/c" "$OUT"; touch "$work/done"; log="$OUT/run.log"
export KI_PROBE_CACHE="$work/probe.json"
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
[ -n "${KI_DRY_RUN:-}${KI_REHEARSAL:-}" ] || nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,\
clocks.mem,temperature.gpu,power.draw --format=csv >> "$log" 2>&1
ship() {  # everything so far, re-packed after every step (at most 8 files come back)
  tar czf "$OUT/bundles.tgz" -C "$work/c" --exclude='bundles/.*' bundles 2>/dev/null
  tar czf "$OUT/summaries.tgz" -C "$work/c" $(cd "$work/c" && ls summary-*.json cut-*.json 2>/dev/null) 2>/dev/null
  [ -f "$KI_PROBE_CACHE" ] && cp "$KI_PROBE_CACHE" "$OUT/probe.json"
}
DEADLINE_MARGIN=25
common=(--cases cases --key "${KI_KEY:-keys/runner.key}" --time-budget 0.5 --host-calls 20 --min-samples 50 --gpu-tag "$tag"
        --out "$work/c")
for step in "$@"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 20 ))
  if [ "$t" -lt 40 ]; then say "stop before $step: $t s left"; break; fi
  case "$step" in
    probe)
      if [ -n "${KI_DRY_RUN:-}${KI_REHEARSAL:-}" ]; then say "plan probe: v4 ceilings and the shortest call"; rc=0; else
      timeout "$t" python3 -c 'from kernelindex.runner.session import _device; _device(10, True, None)' \
        >> "$OUT/probe.log" 2>&1; rc=$?; fi;;
    compare)
      if [ -n "${KI_DRY_RUN:-}${KI_REHEARSAL:-}" ]; then say "plan compare: ${KI_COMPARE:-}"; rc=0; else
      timeout "$t" python3 bench/stream_compare.py --cases cases --out "$OUT/stream-compare.json" ${KI_COMPARE:-} \
        >> "$OUT/compare.log" 2>&1; rc=$?; fi;;
    *)
      IFS=: read -r op skip max suffix regions limit hard <<< "$step"
      limit=${limit:-300}; step_s=$(( t < limit ? t : limit ))
      args=("${common[@]}" --hard-limit "${hard:-40}" --label "${op}${suffix:-}" --operations "$op" --skip-cases "${skip:-0}"
            --max-cases "${max:-0}" --regions "${regions:-}" --bundle-suffix="-v4${suffix:-}"
            --deadline-s $(( step_s - DEADLINE_MARGIN )))
      if [ -n "${KI_DRY_RUN:-}" ]; then
        python3 bench/campaign.py run "${args[@]}" --plan-only 2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}
      else
        timeout --preserve-status -k 15 "$step_s" python3 bench/campaign.py run "${args[@]}" ${KI_REHEARSAL:-} \
          >> "$OUT/campaign.log" 2>&1
        rc=$?
      fi;;
  esac
  say "$step rc=$rc$([ "$rc" -eq 3 ] && echo ' (cut by its limit: finished cases are in its bundle; the next call measures the rest)')"
  [ "$rc" -eq 0 ] && echo "$step" >> "$work/done"
  ship
done
say "end, $(left) s of the script's budget left"
