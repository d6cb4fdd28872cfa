"""``python3 -m kernelindex.campaigns SECONDS STEP...``: one device call of a campaign (campaigns/drive.py), for a
GPU machine that has the package's sources and the carried wheels but not ``ki``'s command-line libraries.
``ki runner campaign run`` is the same engine on a machine with ``ki``. Without steps, the steps of the GPU the
machine reports (``--steps-file``, ``TAG_STEPS``; the carry's ``go.sh`` calls it so)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kernelindex.campaigns.drive import Call, cases_for, key_for, machine_gpu, run_campaign
from kernelindex.campaigns.steps import StepError, gpu_tag, steps_for_gpu


def make_call(budget_s: float, *, work: Path, out: Path, dry_run: bool, rehearse: str, compare: list[str],
              tag: str = "", key: Path | None = None) -> Call:
    """The call on this machine: its GPU (none in a dry run or rehearsal) names the bundles and picks the key and
    the plan."""
    gpu = "" if dry_run or rehearse else machine_gpu()
    tag = tag or (gpu_tag(gpu) if gpu else "h200")
    return Call(budget_s=budget_s, work=work, out=out, gpu=gpu, tag=tag, key=key or key_for(tag),
                cases=cases_for(tag), dry_run=dry_run, rehearse=rehearse, compare=compare)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m kernelindex.campaigns", description=__doc__)
    parser.add_argument("seconds", type=float, help="the call's budget for all its steps")
    parser.add_argument("steps", nargs="*", help="campaigns/steps.py's grammar (none: the GPU's, see --steps-file)")
    parser.add_argument("--steps-file", type=Path, help="TAG STEP… lines: without steps, the line of the GPU "
                        "nvidia-smi names (H200_STEPS, H100_STEPS … in the environment come first)")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("KI_WORK", "/tmp/ki-v4")))
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    parser.add_argument("--dry-run", action="store_true", default=bool(os.environ.get("KI_DRY_RUN")))
    parser.add_argument("--rehearse", default=os.environ.get("KI_REHEARSAL", "").removeprefix(
        "--test-device-product="), help="a product name: the CPU test device instead of the GPU")
    parser.add_argument("--tag", default=os.environ.get("KI_GPU_TAG", ""))
    parser.add_argument("--key", type=Path, default=Path(os.environ["KI_KEY"]) if os.environ.get("KI_KEY") else None)
    args = parser.parse_args(argv)
    steps, tag = args.steps, args.tag
    try:
        if not steps:
            gpu = machine_gpu()
            lines = args.steps_file.read_text().splitlines() if args.steps_file and args.steps_file.is_file() else []
            chosen, steps, source = steps_for_gpu(gpu, dict(os.environ), lines)
            tag = tag or chosen
            print(f"GPU {gpu or 'none'} (tag {chosen}): steps from {source}: {' '.join(steps)}", flush=True)
        call = make_call(args.seconds, work=args.work, out=args.out, dry_run=args.dry_run, rehearse=args.rehearse,
                         compare=os.environ.get("KI_COMPARE", "").split(), tag=tag, key=args.key)
        left = run_campaign(call, steps)
    except StepError as exc:
        print(exc, file=sys.stderr)
        return 2
    if left:
        print(f"left for the next call: {' '.join(left)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
