#!/usr/bin/env bash
# KernelBench H200 campaign (issue 24 item 5) in one or more device calls: a queue of steps run in
# order within SECONDS; results go to $OUT after every step (a call cut by its limit keeps them).
# Steps done on this machine are recorded in /tmp/ki-kb/done and skipped; inside a step, a problem
# with a result file is skipped, so a later call on the still-warm machine continues where the
# earlier one stopped (a fresh machine starts again: ship the results back with each call).
# Run from the repository root with the package importable (PYTHONPATH=src, torch with CUDA).
# Usage: bench/kernelbench_h200.sh SECONDS STEP...
#   LEVELS:IMPLS   e.g. 1:eager,torch-compile  2:eager,torch-compile  1:max-autotune-no-cudagraphs  3:eager,torch-compile
# The case list is bench/kernelbench-cases.json (bench/kernelbench_campaign.py prepare; made here when missing).
set -u
budget=$1; shift; start=$(date +%s); work=/tmp/ki-kb
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work"; touch "$work/done"; log="$OUT/run.log"
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >> "$log" 2>&1
ship() { tar czf "$OUT/results.tgz" -C "$work" results 2>/dev/null; }
[ -f bench/kernelbench-cases.json ] || python3 bench/kernelbench_campaign.py prepare --out bench/kernelbench-cases.json \
  >> "$log" 2>&1
for step in "$@"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 20 ))
  if [ "$t" -lt 60 ]; then say "stop before $step: $t s left"; break; fi
  IFS=: read -r levels impls <<< "$step"
  python3 bench/kernelbench_campaign.py run --cases bench/kernelbench-cases.json --out "$work" \
    --levels "$levels" --impl "$impls" --budget "$t" --time-limit 300 >> "$OUT/campaign.log" 2>&1
  rc=$?
  total=$(python3 -c "import json,sys; print(sum(c['level'] in {int(x) for x in sys.argv[1].split(',')} for c in json.load(open('bench/kernelbench-cases.json'))['cases']))" "$levels")
  have=$(ls "$work/results/${impls//,/+}" 2>/dev/null | wc -l)
  say "$step rc=$rc: $have of $total problems have a result"
  [ "$rc" -eq 0 ] && [ "$have" -ge "$total" ] && echo "$step" >> "$work/done"
  ship
done
say "end, $(left) s of the script's budget left"
