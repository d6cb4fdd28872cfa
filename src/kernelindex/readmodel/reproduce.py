"""How to re-measure a verified run (issue 43 item 9): the ``ki verify`` command naming its operation, workload,
implementation, timed region and protocol version, the package pins it ran with, and where its adapter and
harness code live. Built from what the run records, so it never names a case, adapter or version the run did not."""

from __future__ import annotations

from typing import Any

from kernelindex.domain.sources import RUNNER_PROTOCOL_VERSION, RUNNER_SOURCE
from kernelindex.readmodel.loading import OperationData, Run

# The pieces of the environment a re-measurement must match to compare like with like.
ENVIRONMENT_PINS = ("python", "torch", "triton", "cuda", "driver")
NO_COMMIT = ("The runner does not record the KernelIndex commit it ran, so the code is named by the harness version "
             "its protocol records: the adapter lives in kernelindex.runner.ops, the harness in kernelindex.runner.")
PROBLEM_MODULE = ("Measured by the runner's problem-module harness (a KernelBench problem's own module under "
                  "torch.no_grad()), which ki verify does not run: re-measure it with the campaign step that "
                  "measured it, `ki runner campaign run SECONDS kernelbench:LEVEL:IMPLS` (docs/campaigns.md).")


def workload_selector(digest: str) -> str:
    """The digest prefix ``ki verify --workloads`` takes for exactly this workload."""
    return digest.removeprefix("sha256:")[:16]


def reproduce_json(data: OperationData, run: Run) -> dict[str, Any] | None:
    """The reproduce panel of a run the KernelIndex runner measured; None for a run a source reported."""
    if run.source != RUNNER_SOURCE or run.spec.runner is None:
        return None
    protocol = data.protocols[run.protocol]
    harness = protocol.spec.harness
    implementation = data.implementations[run.implementation]
    pins = [f"{p.name}=={p.version}" for p in implementation.spec.install.packages if p.version]
    software = data.environments[run.environment].spec.software
    environment = {name: software[name] for name in ENVIRONMENT_PINS if name in software}
    code = {"adapter": implementation.metadata.name,
            "call": f"{implementation.spec.callable.module}:{implementation.spec.callable.symbol}",
            "harness": f"{harness.name} v{harness.version}", "commit": None, "commit_note": NO_COMMIT}
    if "problem-module" in (protocol.metadata.name or ""):
        return {"command": None, "why_no_command": PROBLEM_MODULE, "note": None, "install": pins,
                "environment": environment, "code": code}
    command = " ".join([
        "ki verify", f"--operation {data.slug}", f"--workloads {workload_selector(run.workload)}",
        f"--impl {implementation.metadata.name}", f"--region {protocol.spec.timed_region}",
        f"--protocol-version {harness.version}", f"--out reproduce-{run.run_id}",
    ])
    older = harness.version != RUNNER_PROTOCOL_VERSION
    note = (f"This run was measured under protocol v{harness.version}; today's ki verify measures v"
            f"{RUNNER_PROTOCOL_VERSION} and refuses --protocol-version {harness.version}: leave the option out to "
            f"re-measure the same case under v{RUNNER_PROTOCOL_VERSION}.") if older else None
    return {"command": command, "why_no_command": None, "note": note, "install": pins, "environment": environment,
            "code": code}
