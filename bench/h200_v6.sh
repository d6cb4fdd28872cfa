#!/usr/bin/env bash
# Runner protocol v3 campaign, second part (issue 19): a loss's backward starts from upstream gradient 1.0.
# A queue of steps run in order within SECONDS; each step's results go to $OUT as soon as it ends (a call
# cut by its limit keeps them). Steps done on this machine are recorded in /tmp/ki-v6/done and skipped, so
# a later call on the still-warm machine continues the queue where the earlier one stopped (a fresh machine
# starts it again: list only the steps not yet shipped). A step cut by its limit keeps the cases and the regions it
# finished (runner/step_limit.py) and exits 3: not done, so the next call measures only the rest. The bundle, the
# record of what is finished (cut-LABEL.json) and the summary are rewritten after every finished region, so a step
# killed outright (rc 137, or 143 when its SIGTERM was not handled) keeps them too, and resumes the same way.
# Run from the carried folder (src/, bench/, cases/, keys/, whl/ installed into /tmp/site, PYTHONPATH set).
# Usage: bench/h200_v6.sh SECONDS STEP...
#   OP[:SKIP:MAX[:SUFFIX[:REGIONS[:LIMIT[:HARD]]]]]  campaign of one operation: its cases SKIP+1 … SKIP+MAX (MAX 0:
#                        all), only REGIONS (comma-separated; empty: every region the case had), at most LIMIT s
#                        (default 300), HARD s per case-region before the minimum samples stops it (default 40; a run
#                        stopped there is under-sampled and does not rank); its bundle is h200-OP-DATE-v3SUFFIX
#   reverify             10% of the cases measured so far, in a fresh process, no bundle
#   ceilings             copy, read-only and write-only at 64 MiB, 256 MiB, 1 GiB and 4 GiB (issue 20 item 1:
#                        the attainable floor takes the best over kernels and sizes); $work/c/ceilings.json
# KI_REHEARSAL=--test-device-product=H200: a CPU rehearsal. KI_DRY_RUN=1: each step only prints its plan
# (bench/campaign.py run --plan-only: cases parse, regions exist, the step is not empty) and is marked
# done, so a second dry run shows the resume.
set -u
budget=$1; shift; start=$(date +%s); work=${KI_WORK:-/tmp/ki-v6}
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work/c" "$OUT"; touch "$work/done"; log="$OUT/run.log"
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
[ -n "${KI_DRY_RUN:-}" ] || nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,\
temperature.gpu,power.draw --format=csv >> "$log" 2>&1
ship() {  # everything so far, re-packed after every step (at most 8 files come back)
  tar czf "$OUT/bundles.tgz" -C "$work/c" --exclude='bundles/.*' bundles 2>/dev/null  # .NAME.new/.old: a rewrite in flight
  tar czf "$OUT/summaries.tgz" -C "$work/c" $(cd "$work/c" && ls summary-*.json sample.json ceilings.json 2>/dev/null) 2>/dev/null
}
# Each run step gets --deadline-s DEADLINE_MARGIN s before its timeout: the runner cuts at the first safe point after
# it (between sample batches and phases) without a signal, since SIGTERM's handler can be reset by a native library
# (rc 143 twice on the H200, fused-moe under torch.compile). The margin: the longest profiled batch seen (~16 s,
# fused-moe experts 64 forward+backward) plus writing the bundle and summary; SIGTERM stays the backstop.
DEADLINE_MARGIN=25
common=(--cases cases --key keys/runner.key --time-budget 0.5 --host-calls 20 --out "$work/c")
for step in "$@"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 20 ))
  if [ "$t" -lt 40 ]; then say "stop before $step: $t s left"; break; fi
  case "$step" in
    ceilings)
      if [ -n "${KI_DRY_RUN:-}" ]; then python3 bench/campaign.py ceilings --out "$work/c/ceilings.json" --plan-only \
        2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}; else
      timeout "$t" python3 bench/campaign.py ceilings --out "$work/c/ceilings.json" >> "$OUT/ceilings.log" 2>&1
      rc=$?; fi;;
    reverify)
      if [ -n "${KI_DRY_RUN:-}" ]; then say "plan reverify: 10% of the cases measured so far"; rc=0; else
      python3 bench/fidelity.py select --summaries "$work"/c/summary-*.json --every 10 --out "$work/c/sample.json" \
        && timeout --preserve-status -k 15 "$t" python3 bench/campaign.py run "${common[@]}" --hard-limit 40 \
          --label reverify --no-bundle --deadline-s $(( t - DEADLINE_MARGIN )) \
          --only-cases "$work/c/sample.json" ${KI_REHEARSAL:-} \
          --operations "$(python3 -c 'import json,sys; print(",".join(sorted({o for o,_ in json.load(open(sys.argv[1]))})))' "$work/c/sample.json")" \
          >> "$OUT/reverify.log" 2>&1
      rc=$?; fi;;
    *)
      IFS=: read -r op skip max suffix regions limit hard <<< "$step"
      limit=${limit:-300}; step_s=$(( t < limit ? t : limit ))
      args=("${common[@]}" --hard-limit "${hard:-40}" --label "${op}${suffix:-}" --operations "$op" --skip-cases "${skip:-0}"
            --max-cases "${max:-0}" --regions "${regions:-}" --bundle-suffix="-v3${suffix:-}"
            --deadline-s $(( step_s - DEADLINE_MARGIN )))
      if [ -n "${KI_DRY_RUN:-}" ]; then
        python3 bench/campaign.py run "${args[@]}" --plan-only 2>&1 | tee -a "$log"; rc=${PIPESTATUS[0]}
      else
        timeout --preserve-status -k 15 "$step_s" python3 bench/campaign.py run "${args[@]}" ${KI_REHEARSAL:-} \
          >> "$OUT/campaign.log" 2>&1
        rc=$?
      fi;;
  esac
  say "$step rc=$rc$([ "$rc" -eq 3 ] && echo ' (cut by its limit: the finished cases and regions are in their bundle; the next call measures the rest)')$(
    [ "$rc" -eq 137 ] || [ "$rc" -eq 143 ] && echo ' (killed outright: the regions finished before it are in its bundle; the next call on this machine resumes)')"
  [ "$rc" -eq 0 ] && echo "$step" >> "$work/done"
  ship
done
say "end, $(left) s of the script's budget left"
