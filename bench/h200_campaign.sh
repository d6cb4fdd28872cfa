#!/usr/bin/env bash
# The H200 campaign in one device call (run from the carried folder; OUT is the folder that comes back):
# the campaign, then, in fresh processes and while time is left, the fidelity checks:
# 10% of the cases re-verified, compiled rope in the reverse case order, the CUPTI kernel sums.
# Usage: bench/h200_campaign.sh OPERATIONS SECONDS   (SECONDS: the whole script's wall-time budget)
set -u
ops=$1; budget=$2; start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
run() { python3 bench/campaign.py run --cases cases --key keys/runner.key --time-budget 0.5 --host-calls 10 "$@"; }
timeout $(( $(left) - 150 )) python3 bench/campaign.py run --cases cases --key keys/runner.key --time-budget 0.5 \
  --host-calls 10 --out "$OUT/c" --label campaign --operations "$ops" > "$OUT/campaign.log" 2>&1
echo "campaign rc=$? at $(( $(date +%s) - start )) s"
tar czf "$OUT/bundles.tgz" -C "$OUT/c" bundles && rm -rf "$OUT/c/bundles"
python3 bench/fidelity.py select --summaries "$OUT/c/summary-campaign.json" --every 10 --out "$OUT/c/sample.json"
timeout $(( $(left) - 100 )) bash -c "$(declare -f run); run --out '$OUT/c' --label reverify --no-bundle \
  --operations '$ops' --only-cases '$OUT/c/sample.json'" > "$OUT/fidelity.log" 2>&1
echo "re-verification rc=$? at $(( $(date +%s) - start )) s"
timeout $(( $(left) - 60 )) bash -c "$(declare -f run); run --out '$OUT/c' --label rope-reverse --no-bundle \
  --operations rope --impl torch-compile --order reverse" >> "$OUT/fidelity.log" 2>&1
echo "reverse order rc=$? at $(( $(date +%s) - start )) s"
timeout $(( $(left) - 5 )) python3 bench/fidelity.py cupti --cases cases --summaries "$OUT/c/summary-campaign.json" \
  --sample "$OUT/c/sample.json" --out "$OUT/c/cupti.json" >> "$OUT/fidelity.log" 2>&1
echo "cupti rc=$? at $(( $(date +%s) - start )) s"
