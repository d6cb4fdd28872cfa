"""The policy facts of a loaded operation's runs, derived once at load: eligibility (with the physical
floor), evidence level and replication by other trusted runners."""

from __future__ import annotations

from kernelindex.policy.device_time import protocol_version, timing_statistic
from kernelindex.policy.eligibility import EligibilityFacts, SampleCount, eligibility
from kernelindex.policy.evidence import EvidenceFacts, evidence_levels, grad_mode, input_rule, replication_peers
from kernelindex.readmodel.ceiling_checks import run_ceiling_check
from kernelindex.readmodel.court import derive_court
from kernelindex.readmodel.operation_data import OperationData, Run
from kernelindex.readmodel.physical_floors import PhysicalFloors
from kernelindex.readmodel.replication import ReplicationPeer, replication_of


def sample_count(run: Run, data: OperationData) -> SampleCount:
    """The run's samples against the minimum it was held to (runner v3 records it; else its protocol's
    repetitions.count), with the reason it gave for stopping short, or the stop reason it recorded."""
    timing = run.spec.timing
    minimum = timing.min_samples if timing.min_samples is not None else \
        data.protocols[run.protocol].spec.repetitions.count
    return SampleCount(timing.samples, minimum, timing.raw.get("stop_reason") or timing.under_sampled,
                       declared=timing.under_sampled is not None)


def derive_policy(data: OperationData) -> None:
    facts = []
    floors = PhysicalFloors(data)
    for run in data.runs:
        run.eligibility = eligibility(
            EligibilityFacts(
                status=run.status,
                published=True,
                retracted=run.retracted is not None,
                superseded=run.superseded_by is not None,
                median_ns=run.median_ns,
                samples=sample_count(run, data),
                invalid_stored=run.invalid_stored,
                physical_floor_ns=floors.get(run),
            )
        )
        usable = data.usability.get(run.implementation)
        gpu = data.gpu_of(run.environment)
        correctness = run.spec.correctness
        facts.append(
            EvidenceFacts(
                run=run.digest,
                implementation=run.implementation,
                workload=run.workload,
                gpu=gpu.slug if gpu else data.environments[run.environment].spec.hardware.product,
                median_ns=run.median_ns,
                runner_key_id=run.spec.runner.key_id if run.spec.runner else None,
                attested=run.attested,
                correctness_passed=bool(correctness.checked and correctness.passed),
                public_source=bool(usable and usable.source_url),
                pinned_install=bool(usable and usable.install_command),
                raw_samples=bool(run.spec.timing.samples_digest),
                region=data.protocols[run.protocol].spec.timed_region,
                statistic=timing_statistic(run.spec.timing.method),
                protocol_version=protocol_version(data.protocols[run.protocol].spec),
                superseded=run.superseded_by is not None,
                inputs=input_rule(data.protocols[run.protocol].spec.input_regeneration),
                grad_mode=grad_mode(data.protocols[run.protocol].spec.timer),
            )
        )
    for run in data.runs:
        run.ceiling_check = run_ceiling_check(data, run, floors)
    levels = evidence_levels(facts, set(data.trusted_keys))
    for run in data.runs:
        run.evidence = levels[run.digest]
    derive_court(data)
    _derive_replication(data, facts)


def _derive_replication(data: OperationData, facts: list[EvidenceFacts]) -> None:
    peers = replication_peers(facts, set(data.trusted_keys))
    run_ids = {run.digest: run.run_id for run in data.runs}
    key_of = {f.run: f.runner_key_id for f in facts}
    for run in data.runs:
        found = [
            ReplicationPeer(run_ids[p.run], data.trusted_keys.get(p.runner_key_id, p.runner_key_id), p.runner_key_id,
                            p.median_ns, p.agrees)
            for p in peers.get(run.digest, [])
        ]
        if found and run.median_ns is not None:
            key = key_of[run.digest] or ""
            run.replication = replication_of(data.trusted_keys.get(key, key), run.median_ns, found)
