#!/usr/bin/env bash
# KernelBench H200 campaign (issue 24 item 5) in one or more device calls: a queue of steps run in order
# within SECONDS. After every step its results are bundled (signed with $KI_KEY when the key is there) and
# everything so far is packed into $OUT (a call cut by its limit keeps what it did). Steps done on this
# machine are recorded in $KI_WORK/done and skipped; inside a step a problem with a result file is skipped,
# so a later call on the still-warm machine continues where the earlier one stopped (a fresh machine starts
# again unless KI_RESUME names the earlier calls' results.tgz files, carried along: they are unpacked into
# $KI_WORK first, so their problems are skipped and the bundles are remade from every call's results).
# Calls fired at once after the previous one still found a fresh machine (2026-12-03): carry them.
# Run from the repository root (or the carried folder) with the package importable (PYTHONPATH=src).
# Usage: bench/kernelbench_h200.sh SECONDS STEP...
#   LEVELS:IMPLS[:SKIP:MAX]   e.g. 1:eager,torch-compile  2:eager,torch-compile  1:max-autotune-no-cudagraphs
#                             3:eager,torch-compile:0:25 (problems SKIP+1 … SKIP+MAX of the levels; MAX 0: all)
# KI_REHEARSAL="--test-device-product=H200 --min-samples=20 --warmup-calls=1 --warmup-ms=0": a CPU
# rehearsal (real problems, nominal times). KI_GPUS (default 1): GPUs; KI_WORKERS_PER_GPU (default 1): problem
# processes sharing each GPU, every GPU phase under an exclusive GPU lock (docs/sources-kernelbench.md).
# KI_RUN_ARGS: more options of `run` (e.g. --reference-device=cpu, --inputs-on-cpu). KI_KEY (default keys/runner.key),
# KI_WORK (default /tmp/ki-kb), KI_CASES (default bench/kernelbench-cases.json, made by `prepare` when missing),
# KI_BUNDLE_TAG (default today's date, the bundle names' last part: a second runner key's bundles of the same day
# need their own names, or they would replace the first key's when shipped).
set -u
budget=$1; shift; start=$(date +%s); work=${KI_WORK:-/tmp/ki-kb}; key=${KI_KEY:-keys/runner.key}
cases=${KI_CASES:-bench/kernelbench-cases.json}; day=${KI_BUNDLE_TAG:-$(date -u +%Y%m%d)}
left() { echo $(( budget - ($(date +%s) - start) )); }
mkdir -p "$work/bundles" "$OUT"; touch "$work/done"; log="$OUT/run.log"
for earlier in ${KI_RESUME:-}; do tar xzf "$earlier" -C "$work" || { echo "KI_RESUME: cannot unpack $earlier" >&2; exit 2; }; done
say() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$log"; }
[ -n "${KI_REHEARSAL:-}" ] || nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,\
temperature.gpu,power.draw --format=csv >> "$log" 2>&1
ship() {  # everything so far, re-packed after every step
  tar czf "$OUT/results.tgz" -C "$work" results environments 2>/dev/null
  tar czf "$OUT/bundles.tgz" -C "$work" bundles 2>/dev/null
}
[ -f "$cases" ] || python3 bench/kernelbench_campaign.py prepare --out "$cases" >> "$log" 2>&1
for step in "$@"; do
  if grep -qxF "$step" "$work/done"; then say "skip $step (done in an earlier call)"; continue; fi
  t=$(( $(left) - 30 ))
  if [ "$t" -lt 60 ]; then say "stop before $step: $t s left"; break; fi
  IFS=: read -r levels impls skip max <<< "$step"
  python3 bench/kernelbench_campaign.py run --cases "$cases" --out "$work" --levels "$levels" --impl "$impls" \
    --skip "${skip:-0}" --max "${max:-0}" --budget "$t" --time-limit 300 --gpus "${KI_GPUS:-1}" \
    --workers-per-gpu "${KI_WORKERS_PER_GPU:-1}" ${KI_REHEARSAL:-} ${KI_RUN_ARGS:-} >> "$OUT/campaign.log" 2>&1
  rc=$?
  missing=$(python3 - "$cases" "$levels" "${skip:-0}" "${max:-0}" "$work/results/${impls//,/+}" <<'PY'
import json, os, sys
cases, levels, skip, most, folder = sys.argv[1], {int(x) for x in sys.argv[2].split(",")}, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
step = [c for c in json.load(open(cases))["cases"] if c["level"] in levels][skip:]
step = step[:most] if most else step
print(sum(not os.path.exists(f"{folder}/{c['level']}-{c['number']}.json") for c in step))
PY
)
  say "$step rc=$rc: $missing problems of the step without a result"
  if [ -f "$key" ]; then  # one bundle per level and implementation set, remade from every result so far
    for level in ${levels//,/ }; do
      name="h200-kernelbench-level$level-${impls//,/-}-$day"
      rm -rf "$work/bundles/$name"
      python3 bench/kernelbench_campaign.py bundle --cases "$cases" --results "$work" --impl "$impls" \
        --levels "$level" --key "$key" --bundle "$work/bundles/$name" 2>&1 | tee -a "$log"
    done
  else say "no key at $key: results only (bundle them later with bench/kernelbench_campaign.py bundle)"; fi
  [ "$rc" -eq 0 ] && [ "$missing" -eq 0 ] && echo "$step" >> "$work/done"
  ship
done
ship
say "end, $(left) s of the script's budget left"
