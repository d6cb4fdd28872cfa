from dataclasses import replace
from datetime import UTC, datetime, timedelta

from kernelindex import registry
from kernelindex.policy.eligibility import EligibilityFacts, eligibility
from kernelindex.policy.evidence import NO_GRAD, EvidenceFacts, evidence_levels, grad_mode, replication_peers
from kernelindex.policy.floor import Attainable, floor_estimate
from kernelindex.policy.selection import (
    CohortChoice,
    WorkloadChoice,
    architecture_age,
    default_cohort,
    default_workload,
    leading,
)
from kernelindex.policy.staleness import is_stale
from kernelindex.policy.usability import usability

LIGER_PROJECT = {"name": "Liger-Kernel", "kind": "library", "repository": "https://github.com/linkedin/Liger-Kernel"}


def test_usable_liger_revision() -> None:
    result = usability(
        {
            "install": {"method": "pip", "packages": [{"name": "liger-kernel", "version": "0.2.1"}]},
            "license": {"declared": "BSD-2-Clause", "concluded": "BSD-2-Clause"},
        },
        LIGER_PROJECT,
    )
    assert result.usable and result.install_command == 'pip install "liger-kernel==0.2.1"'


def test_unpinned_torch_compile_is_not_usable_with_reason() -> None:
    result = usability(
        {
            "install": {
                "method": "pip",
                "packages": [{"name": "torch"}],
                "why_missing": "the source did not record the PyTorch version.",
            },
            "license": {"concluded": "BSD-3-Clause"},
        },
        {"repository": "https://github.com/pytorch/pytorch"},
    )
    assert not result.usable
    assert [r.code for r in result.reasons] == ["NO_PINNED_INSTALL"]
    assert result.reasons[0].sentence == "No pinned install: the source did not record the PyTorch version."


def test_every_usability_reason() -> None:
    result = usability({"install": {"method": "none"}, "license": {"declared": "MIT"}}, {})
    assert [r.code for r in result.reasons] == ["NO_PUBLIC_SOURCE", "NO_PINNED_INSTALL", "LICENSE_UNKNOWN"]
    assert "declared MIT" in result.reasons[2].sentence


def test_transformers_and_liger_both_pinned_for_a_compiled_function() -> None:
    result = usability(
        {
            "install": {
                "method": "pip",
                "packages": [{"name": "torch", "version": "2.11.0"}, {"name": "transformers", "version": "5.17.0"}],
            },
            "license": {"concluded": "Apache-2.0"},
        },
        {"repository": "r"},
    )
    assert result.install_command == 'pip install "torch==2.11.0" "transformers==5.17.0"'


def test_eligibility_reasons() -> None:
    ok = eligibility(EligibilityFacts("passed", True, False, False, 100))
    assert ok.eligible and not ok.reasons
    bad = eligibility(EligibilityFacts("incorrect_numerical", True, True, True, None))
    assert [r.code for r in bad.reasons] == ["STATUS_NOT_PASSED", "RETRACTED", "SUPERSEDED", "NO_PRIMARY_VALUE"]


def test_staleness_at_180_days() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    assert is_stale(now - timedelta(days=181), now)
    assert not is_stale(now - timedelta(days=180), now)


def _facts(run: str, key: str | None, median: int, **kw: bool | str) -> EvidenceFacts:
    defaults = dict(
        attested=True, correctness_passed=True, public_source=False, pinned_install=False, raw_samples=False
    )
    defaults.update(kw)
    return EvidenceFacts(run, "impl", "wl", "h200", median, key, **defaults)


def test_evidence_levels() -> None:
    runs = [
        _facts("reported", None, 100, attested=False, correctness_passed=False),
        _facts("reproducible", None, 100, attested=False, public_source=True, pinned_install=True, raw_samples=True),
        _facts("untrusted", "k-unknown", 100),
        _facts("unattested", "k1", 100, attested=False),
        _facts("v1", "k1", 100),
    ]
    levels = evidence_levels(runs, {"k1", "k2"})
    assert levels == {
        "reported": "reported",
        "reproducible": "reproducible",
        "untrusted": "reported",
        "unattested": "reported",
        "v1": "verified",
    }


def test_replicated_needs_two_trusted_runners_within_five_percent() -> None:
    levels = evidence_levels([_facts("a", "k1", 100), _facts("b", "k2", 104), _facts("c", "k1", 101)], {"k1", "k2"})
    assert levels == {"a": "replicated", "b": "replicated", "c": "replicated"}
    far = evidence_levels([_facts("a", "k1", 100), _facts("b", "k2", 120)], {"k1", "k2"})
    assert far == {"a": "verified", "b": "verified"}


def test_a_device_time_never_replicates_a_graph_replay_time() -> None:
    """Runner v3's CUPTI device time and v2's graph-replay time of the same call are different statistics:
    even when they agree within 5%, neither confirms the other."""
    device = EvidenceFacts("v3", "impl", "wl", "h200", 100, "k2", attested=True, correctness_passed=True,
                           public_source=False, pinned_install=False, raw_samples=True, statistic="device")
    levels = evidence_levels([_facts("v2", "k1", 101), device], {"k1", "k2"})
    assert levels == {"v2": "verified", "v3": "verified"}


def test_replicated_means_two_runners_under_the_same_protocol_version() -> None:
    """Issue 42 item 4: a v4 stream time and a v3 run of the same statistic word never confirm each other; two
    runners under one protocol version do."""
    v3 = _facts("v3", "k1", 100, statistic="stream", protocol_version="3")
    v4 = _facts("v4", "k2", 101, statistic="stream", protocol_version="4")
    assert evidence_levels([v3, v4], {"k1", "k2"}) == {"v3": "verified", "v4": "verified"}
    twin = _facts("twin", "k1", 102, statistic="stream", protocol_version="4")
    assert evidence_levels([twin, v4], {"k1", "k2"}) == {"twin": "replicated", "v4": "replicated"}


def test_a_superseded_run_never_keeps_another_run_replicated() -> None:
    """The 68 badges that rested on a superseded run: a superseded run is history, neither replicated nor making
    another run replicated; its peer says so in its replication list too."""
    old = _facts("old", "k1", 100, superseded=True)
    live = _facts("live", "k2", 101)
    assert evidence_levels([old, live], {"k1", "k2"}) == {"old": "verified", "live": "verified"}
    assert replication_peers([old, live], {"k1", "k2"}) == {}


def test_a_forward_under_no_grad_never_replicates_one_with_autograd_on() -> None:
    """KernelBench level 1 re-measured under torch.no_grad() (runner-14) agrees with runner-12's autograd-on
    runs on most problems, but they timed different calls (Inductor compiled a different graph: 1/83 4.9x):
    neither confirms the other."""
    old = _facts("grad-on", "k1", 100)
    new = EvidenceFacts("no-grad", "impl", "wl", "h200", 101, "k2", attested=True, correctness_passed=True,
                        public_source=False, pinned_install=False, raw_samples=True, grad_mode=NO_GRAD)
    assert evidence_levels([old, new], {"k1", "k2"}) == {"grad-on": "verified", "no-grad": "verified"}
    assert grad_mode("CUPTI device time …; the timed call runs under torch.no_grad() (autograd off)") == NO_GRAD
    assert grad_mode("CUPTI device time (PyTorch profiler's CUDA activity): per call, …") == ""


def _rope_workload(seq: int = 2048, hidden: int = 8192) -> tuple[dict, dict]:
    op = registry.load_operation("rope").model_dump(mode="json")["spec"]
    head_dim = hidden // 32
    q = [1, 32, seq, head_dim]
    k = [1, 8, seq, head_dim]
    cs = [1, seq, head_dim]
    tensors = [
        {"name": n, "dtype": "bf16", "shape": s, "strides": []}
        for n, s in (("q", q), ("k", k), ("cos", cs), ("sin", cs), ("q_out", q), ("k_out", k))
    ]
    return op, {
        "axes": {"seq": seq, "hidden": hidden, "q_heads": 32, "kv_heads": 8},
        "dtypes": {"T": "bf16"},
        "tensors": tensors,
    }


def test_floor_v1_rope_on_a100_counts_outputs() -> None:
    op, wl = _rope_workload()
    floor = floor_estimate(op, wl, registry.gpus()["a100-80gb"])
    assert round(floor.floor_ns / 1000, 1) == 42.2
    assert round(58880 / floor.floor_ns, 2) == 1.40
    assert floor.bound == "bandwidth" and floor.compute_ns is None
    assert {t.name: t.bytes for t in floor.tensors}["q_out"] == 33_554_432
    assert "2,039 GB/s" in floor.bandwidth_source


def test_floor_v1_embedding_counts_only_touchable_rows() -> None:
    op = registry.load_operation("embedding").model_dump(mode="json")["spec"]
    wl = {
        "axes": {"batch": 32, "seq": 512, "vocab": 1024, "hidden": 768},
        "dtypes": {"T": "fp32"},
        "tensors": [
            {"name": "input_ids", "dtype": "int64", "shape": [32, 512], "strides": [512, 1]},
            {"name": "weight", "dtype": "fp32", "shape": [1024, 768], "strides": [768, 1]},
            {"name": "y", "dtype": "fp32", "shape": [32, 512, 768], "strides": [393216, 768, 1]},
        ],
    }
    floor = floor_estimate(op, wl, registry.gpus()["a100-80gb"])
    assert round(floor.floor_ns / 1000, 1) == 26.3
    assert round(39712 / floor.floor_ns, 2) == 1.51
    big_vocab = {
        **wl,
        "axes": {**wl["axes"], "vocab": 131072},
        "tensors": [wl["tensors"][0], {**wl["tensors"][1], "shape": [131072, 768]}, wl["tensors"][2]],
    }
    weight = next(t for t in floor_estimate(op, big_vocab, registry.gpus()["a100-80gb"]).tensors if t.name == "weight")
    assert weight.bytes == 16384 * 768 * 4 and "16,384 of 131,072 rows" in weight.note


def test_measured_floor_uses_the_measured_bandwidth() -> None:
    op, wl = _rope_workload()
    floor = floor_estimate(op, wl, registry.gpus()["h200"], measured_bandwidth_bytes_per_s=4.3e12)
    assert floor.measured and abs(floor.floor_ns - floor.bytes_total / 4.3e12 * 1e9) < 1e-6


def test_default_workload_and_cohort() -> None:
    choices = [
        WorkloadChoice("big", 6, 268_000_000, (8, 2048, 1024, 4096)),
        WorkloadChoice("small", 6, 53_000_000, (32, 512, 1024, 768)),
        WorkloadChoice("few", 3, 1, (1, 1, 1, 1)),
    ]
    assert default_workload(choices) == "small"
    t = datetime(2024, 9, 3, tzinfo=UTC)
    cohorts = [
        CohortChoice("a100-fwd", 3, "forward", None, t),
        CohortChoice("h200-fwd", 3, "forward", "h200", t + timedelta(days=800)),
        CohortChoice("a100-full", 3, "forward+backward", None, t),
    ]
    assert default_cohort(cohorts, ["h100-sxm", "h200", "b200"]) == "a100-fwd"
    assert default_cohort(cohorts[1:], ["h100-sxm", "h200", "b200"]) == "h200-fwd"


def test_default_cohort_leads_with_the_best_evidence() -> None:
    """Issue 43 item 1: an asked GPU first, then verified over reported, then the newest architecture,
    then forward and the longest-standing cohort; the size of a cohort only breaks what is left."""
    t = datetime(2024, 9, 3, tzinfo=UTC)
    gpus = ["h100-sxm", "h200", "b200"]
    l40s = CohortChoice("l40s", 900, "forward", "l40s", t, architecture="sm_89", workload="w1")
    a100 = CohortChoice("a100", 40, "forward", "a100-80gb", t, architecture="sm_80", workload="w1")
    h200 = CohortChoice("h200", 2, "forward", "h200", t + timedelta(days=800), verified=True,
                        architecture="sm_90", workload="w2")
    h100 = CohortChoice("h100", 3, "forward", "h100-sxm", t + timedelta(days=700), verified=True,
                        architecture="sm_90", workload="w2")
    b200_back = CohortChoice("b200b", 5, "backward", "b200", t, architecture="sm_100", workload="w1")
    every = [l40s, a100, h200, h100, b200_back]
    assert default_cohort(every, gpus) == "h100"  # verified; sm_90 twice: the longest-standing
    assert default_cohort(every, gpus, ["a100-80gb"]) == "a100"  # the asked GPU first
    assert default_cohort(every, gpus, ["mi300x"]) == "h100"  # an asked GPU without a cohort asks nothing
    assert default_cohort([l40s, a100, b200_back], gpus) == "b200b"  # reported: the newest architecture
    assert default_cohort([l40s, a100], gpus) == "l40s"
    assert [c.key for c in leading(every, ["l40s"])] == ["l40s"]
    assert {c.workload for c in leading(every)} == {"w2"}
    choices = [WorkloadChoice("w1", 945, 1, (1,)), WorkloadChoice("w2", 5, 1, (2,))]
    assert default_workload(choices, {"w2"}) == "w2" and default_workload(choices) == "w1"
    assert architecture_age("sm_90") > architecture_age("sm_89") > architecture_age("sm_86")
    assert architecture_age("gfx950") > architecture_age("sm_90") > architecture_age(None)


def test_environment_key_ignores_what_a_runner_measured() -> None:
    from kernelindex.policy.cohorts import cohort_key, environment_key

    base = {"hardware": {"vendor": "NVIDIA", "product": "NVIDIA H200"}, "software": {"torch": "2.11.0"}}
    measured = {**base, "copy_bandwidth_bytes_per_s": 4.2e12, "clocks": {"sm_mhz": "1980"}}
    assert environment_key(base) == environment_key(measured)
    assert environment_key(base) != environment_key({**base, "software": {"torch": "2.12.0"}})
    assert cohort_key("w", "p", environment_key(base)) == cohort_key("w", "p", environment_key(measured))


def test_environment_key_ignores_which_implementation_packages_were_installed() -> None:
    """A campaign that left Liger-Kernel out (runner keys 15 and 16 carried no Liger wheel) ran on the same
    platform as one that installed it: its max-autotune GEMMs rank beside the earlier cuBLAS runs."""
    from kernelindex.policy.cohorts import environment_key

    platform = {"cuda": "13.0", "driver": "580.159.04", "python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0"}
    without = {"hardware": {"vendor": "NVIDIA", "product": "NVIDIA H200"}, "software": platform}
    with_liger = {**without, "software": {**platform, "liger-kernel": "0.8.5", "transformers": "5.17.0"}}
    assert environment_key(without) == environment_key(with_liger)
    assert environment_key(without) != environment_key({**without, "software": {**platform, "triton": "3.7.0"}})
    flags = {**without, "software": {**platform, "torch.backends.cudnn.allow_tf32": "False"}}
    assert environment_key(without) != environment_key(flags)  # a backend flag changes results: it splits


def test_throughput_uses_the_bound_unit() -> None:
    op, wl = _rope_workload()
    estimate = floor_estimate(op, wl, registry.gpus()["a100-80gb"])
    value, unit = estimate.throughput(58_880)  # type: ignore[misc]
    assert unit == "GB/s" and round(value) == 1460  # 85.98 MB in 58.88 µs (rope A100 forward, Liger)
    assert estimate.throughput(None) is None


def test_a_random_scalar_backward_never_replicates_an_upstream_one_backward() -> None:
    """Issue 19: a loss's backward from a random upstream scalar (the superseded v3 protocol) and one from
    upstream gradient 1.0 are different measurements; agreeing medians from two runners confirm nothing."""
    from kernelindex.policy.evidence import input_rule
    from kernelindex.runner.records import UPSTREAM_LOSS

    v2 = ("fresh random inputs for each of 3 correctness checks; timing uses one further fresh input set per "
          "implementation and region (in-place implementations keep transforming it)")
    random_scalar, upstream_one = input_rule(v2), input_rule(f"{v2}; {UPSTREAM_LOSS}")
    assert random_scalar != upstream_one
    # runner v1's wording of the same forward inputs is the same rule: it still replicates v2's runs
    assert input_rule(v2.replace("implementation and region", "implementation")) == random_scalar

    def backward(run: str, key: str, median: int, inputs: str) -> EvidenceFacts:
        return EvidenceFacts(run, "impl", "wl", "h200", median, key, attested=True, correctness_passed=True,
                             public_source=False, pinned_install=False, raw_samples=True, region="backward",
                             statistic="device", inputs=inputs)

    old, new = backward("old", "k1", 100, random_scalar), backward("new", "k2", 101, upstream_one)
    assert evidence_levels([old, new], {"k1", "k2"}) == {"old": "verified", "new": "verified"}
    again = backward("again", "k1", 102, upstream_one)
    assert evidence_levels([again, new], {"k1", "k2"}) == {"again": "replicated", "new": "replicated"}


def test_the_attainable_floor_divides_by_the_ceiling_of_the_calls_own_mix_at_its_size() -> None:
    """Issue 42 item 3: with a v4 ceiling table the attainable floor is the call's bytes over the bandwidth measured
    for its read/write mix at its size — not the best rate any run reached on the GPU."""
    from kernelindex.policy.mix_ceiling import CeilingFigure, mix_ceiling

    op, wl = _rope_workload()
    table = tuple(CeilingFigure(kernel, size << 20, rate) for kernel, rate in
                  (("read", 3.3e12), ("copy", 3.7e12), ("write", 4.2e12)) for size in (64, 1024))
    best_run = Attainable(4.7e12, "verified run x moved its bytes at this rate", run_id="0123456789abcdef")
    floor = floor_estimate(op, wl, registry.gpus()["h200"], attainable=replace(best_run, table=table))
    read = sum(t.bytes for t in floor.tensors if t.direction == "read")
    write = floor.bytes_total - read
    assert read > write > 0.45 * (read + write)  # rope reads q, k, cos, sin and writes q, k: near the copy's mix
    expected = mix_ceiling(table, read, write)
    assert expected is not None and floor.bandwidth_bytes_per_s == expected
    assert floor.bandwidth_bytes_per_s < 4.7e12 and floor.bandwidth_run_id == ""  # no run sets it any more
    share = f"({100 * write / (read + write):.0f}% writes)"
    assert floor.measured and f"for this call's mix {share}" in floor.bandwidth_source
    without = floor_estimate(op, wl, registry.gpus()["h200"], attainable=best_run)
    assert without.bandwidth_bytes_per_s == 4.7e12 and without.bandwidth_run_id == "0123456789abcdef"
