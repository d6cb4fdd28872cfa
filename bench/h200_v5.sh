#!/usr/bin/env bash
# Runner protocol v3 campaign (runner key 5) on the H200 (2026-12-01, issue 19) in one or more device calls: a queue of steps run in order
# within SECONDS; each step's results go to $OUT as soon as it ends (a call cut by its limit keeps them).
# Steps done on this machine are recorded in /tmp/ki-v5/done and skipped, so a later call on the still-warm
# machine continues the queue where the earlier one stopped (a fresh machine starts it again).
# Run from the carried folder (src/, bench/, cases/, keys/, whl/ installed into /tmp/site, PYTHONPATH set).
# Usage: bench/h200_v3.sh SECONDS STEP...   (KI_REHEARSAL=--test-device-product=H200: a CPU rehearsal)
#   fleet                 the fleet proof (bench/fleet_proof.py), at most 240 s
#   OP[:SKIP:MAX[:SUFFIX]] campaign of one operation: its cases SKIP+1 … SKIP+MAX (MAX 0: all), at most 300 s
#   reverify              10% of the cases measured so far, in a fresh process, no bundle
set -u
budget=$1; shift; start=$(date +%s); work=/tmp/ki-v5
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work/c"; touch "$work/done"; log="$OUT/run.log"
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >> "$log" 2>&1
ship() {  # everything so far, re-packed after every step (at most 8 files come back)
  tar czf "$OUT/bundles.tgz" -C "$work/c" bundles 2>/dev/null
  tar czf "$OUT/summaries.tgz" -C "$work/c" $(cd "$work/c" && ls summary-*.json sample.json 2>/dev/null) 2>/dev/null
  [ -d "$work/fleet" ] && tar czf "$OUT/fleet.tgz" -C "$work" fleet
}
for step in "$@"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 20 ))
  if [ "$t" -lt 40 ]; then say "stop before $step: $t s left"; break; fi
  case "$step" in
    fleet)
      timeout $(( t < 240 ? t : 240 )) python3 bench/fleet_proof.py --out "$work/fleet" ${KI_REHEARSAL:-} > "$OUT/fleet.log" 2>&1;;
    reverify)
      python3 bench/fidelity.py select --summaries "$work"/c/summary-*.json --every 10 --out "$work/c/sample.json" \
        && timeout "$t" python3 bench/campaign.py run --cases cases --key keys/runner.key --time-budget 0.5 --hard-limit 40 \
          --host-calls 20 --out "$work/c" --label reverify --no-bundle --only-cases "$work/c/sample.json" ${KI_REHEARSAL:-} \
          --operations "$(python3 -c 'import json,sys; print(",".join(sorted({o for o,_ in json.load(open(sys.argv[1]))})))' "$work/c/sample.json")" \
          >> "$OUT/reverify.log" 2>&1;;
    *)
      IFS=: read -r op skip max suffix <<< "$step"
      timeout $(( t < 300 ? t : 300 )) python3 bench/campaign.py run --cases cases --key keys/runner.key \
        --time-budget 0.5 --hard-limit 40 --host-calls 20 --out "$work/c" --label "${op}${suffix:-}" --operations "$op" \
        --skip-cases "${skip:-0}" --max-cases "${max:-0}" --bundle-suffix="-v3${suffix:-}" ${KI_REHEARSAL:-} >> "$OUT/campaign.log" 2>&1;;
  esac
  rc=$?
  say "$step rc=$rc"
  [ "$rc" -eq 0 ] && echo "$step" >> "$work/done"
  ship
done
say "end, $(left) s of the script's budget left"
