"""Implementations whose timed region does another region's work (``registry.forward_computes_gradient``):
a forward that also computes the gradient, a backward that only scales it. The row notes and the one floor
rule (``skips_floor_traffic``) that every surface reads, eligibility's physical-floor check included."""

from __future__ import annotations

from kernelindex import registry
from kernelindex.readmodel.labels import implementation_slug
from kernelindex.readmodel.operation_data import OperationData, Run

FORWARD_WORK_NOTE = "This forward also computes the gradient; compare forward+backward."
BACKWARD_WORK_NOTE = "This backward only scales the gradient its forward computed; compare forward+backward."
SHIFTED = {"forward": FORWARD_WORK_NOTE, "backward": BACKWARD_WORK_NOTE}


def forward_work(data: OperationData, run: Run) -> str | None:
    """How the run's implementation computes the gradient inside its forward, when it declares it and
    the run timed the forward or the backward (the regions it shifts work between); None otherwise. A
    revision the runner recorded with the adapter's declaration (runner v3) is held to it; older
    revisions and imported ones (Liger's own benchmark rows) to the registry's entry for their line,
    the same entry the adapters read."""
    if data.protocols[run.protocol].spec.timed_region not in SHIFTED:
        return None
    implementation = data.implementations[run.implementation]
    declared = implementation.spec.forward_computes_gradient
    how = registry.forward_computes_gradient().get(implementation_slug(implementation))
    if declared is False:
        return None
    return how or ("its forward computes the gradients, as its adapter declares" if declared else None)


def skips_floor_traffic(region_note: str | None) -> bool:
    """The one rule for floors: a backward that only scales a gradient its forward computed skips the
    traffic its region's floor counts, so no ratio to that floor (row, run page, headline card, the floor
    panel's record), no throughput over its bytes and no attainable rate is taken from it."""
    return region_note == BACKWARD_WORK_NOTE


def does_other_regions_work(data: OperationData, run: Run) -> bool:
    """Whether a run is a backward that only scales a gradient its forward computed: shown and labelled,
    but left out of rankings, headlines, records and margins (issue 43 item 5)."""
    return skips_floor_traffic(forward_work_note(data, run))


def forward_work_note(data: OperationData, run: Run, *, how: bool = False) -> str | None:
    """The row's note (this forward also computes the gradient / this backward only scales it; compare
    forward+backward), with how the implementation does it when ``how``; None when the run's region
    does only its own work."""
    done = forward_work(data, run)
    if not done:
        return None
    note = SHIFTED[data.protocols[run.protocol].spec.timed_region]
    return f"{note.removesuffix('; compare forward+backward.')} ({done}); compare forward+backward." if how else note
