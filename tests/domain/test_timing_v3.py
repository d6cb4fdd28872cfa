"""Runner protocol v3's manifest fields: device time with its cross-check, host cost and sampling."""

import pytest
from pydantic import ValidationError

from kernelindex.domain.specs import ImplementationRevisionBody, Timing
from kernelindex.policy.device_time import host_bound_words, is_host_bound

V3 = {
    "median_ns": 4_600, "p20_ns": 4_500, "p80_ns": 4_700, "mad_ns": 60, "samples": 200,
    "method": "cupti-device-time", "span_median_ns": 4_900,
    "cross_check": {"method": "per_call_events", "median_ns": 425_800, "agrees": None,
                    "detail": "capture failed: the call synchronises with the host"},
    "host": {"wall_ns": 430_000, "cpu_ns": 428_000, "syncs_per_call": 2, "device_to_host_copies_per_call": 1,
             "bound": True},
    "min_samples": 100,
}


def test_a_v3_timing_round_trips_and_an_old_timing_keeps_its_shape() -> None:
    timing = Timing.model_validate(V3)
    assert timing.host is not None and timing.host.bound and timing.host.syncs_per_call == 2
    assert timing.cross_check is not None and timing.cross_check.agrees is None
    old = Timing.model_validate({"median_ns": 5_500, "method": "cuda_graph_replay", "samples": 100})
    dumped = old.model_dump(mode="json", exclude_none=True)
    assert set(dumped) == {"median_ns", "method", "samples", "raw", "secondary"}  # no v3 key: same digest


def test_a_cross_check_method_outside_the_protocol_is_refused() -> None:
    with pytest.raises(ValidationError):
        Timing.model_validate({**V3, "cross_check": {"method": "do_bench", "median_ns": 5}})
    with pytest.raises(ValidationError):
        Timing.model_validate({**V3, "host": {**V3["host"], "wall_ns": 0}})


def test_the_forward_gradient_declaration_is_absent_unless_declared() -> None:
    fields = ImplementationRevisionBody.model_fields
    assert fields["forward_computes_gradient"].default is None


def test_host_bound_is_wall_over_device_by_more_than_a_fifth() -> None:
    assert is_host_bound(12_001, 10_000)
    assert not is_host_bound(12_000, 10_000)
    assert host_bound_words(425_800, 2, 4_600) == (
        "host-bound on this host: 425.8 µs per call wall time, 2 syncs per call; device time 4.60 µs")
