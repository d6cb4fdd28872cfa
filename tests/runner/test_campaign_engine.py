"""``ki runner campaign`` on the CPU with real shipped bundles: the plan from the catalog's verified runs, a dry run
that resumes on its second call, the call's budget, and shipping what came back with its supersessions and ledger."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from kernelindex.campaigns.drive import Call, cases_for, run_campaign
from kernelindex.campaigns.ledger import ShipError, read_call, ship
from kernelindex.campaigns.selection import (
    SUPERSESSIONS,
    VERIFIED,
    plan,
    protocol_share,
    read_shipped,
    resolve_gpu,
    runner_operations,
    write_cases,
)
from kernelindex.campaigns.steps import StepError, expand, gpu_tag, parse
from kernelindex.campaigns.supersede import STREAM_REASON
from kernelindex.trust.bundles import verify_directory

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
# rope: v3 on the H200, superseded by v4 there; KL-div: v3 on the H200, v4 on the H100 (2026-12-07)
BUNDLES = ("h200-rope-20261201-v3", "h200-rope-20261207-v4", "h200-kl-div-20261201-v3", "h100-kl-div-20261207-v4")


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("verified")
    for name in BUNDLES:
        shutil.copytree(VERIFIED / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def shipped(verified: Path):  # type: ignore[no-untyped-def]
    return read_shipped(verified, SUPERSESSIONS)


def test_steps_keep_the_device_scripts_words() -> None:
    step = parse("layer-norm:0:3:-b:forward:120:30")
    assert (step.kind, step.operations, step.most, step.suffix, step.regions, step.limit_s, step.hard_s) == \
        ("operation", ("layer-norm",), 3, "-b", "forward", 120, 30)
    assert step.bundle_suffix == "-v4-b" and parse("rope").limit_s == 300 and parse("probe").kind == "probe"
    gemm = parse("gemm-n128-k2048,gemm-n256-k4096:gemm:baseline:-cublas:240")
    assert (gemm.kind, gemm.selection, gemm.impl, gemm.label) == ("selection", "gemm", "baseline",
                                                                  "gemm-n128-k2048+1-cublas")
    kb = parse("kernelbench:1,2:eager,torch-compile:0:25")
    assert (kb.kind, kb.levels, kb.most, kb.label) == ("kernelbench", "1,2", 25, "kernelbench-1+2-eager-torch-compile")
    assert expand("gemm-cublas", {"gemm": ["a", "b", "c", "d", "e"]}) == \
        ["a,b,c,d:gemm:baseline:-cublas:240", "e:gemm:baseline:-cublas:240"]
    for bad in ("rope:x", "rope,softmax:0:1", "kernelbench:1", "a:b"):
        with pytest.raises(StepError, match="step"):
            parse(bad)
    assert (gpu_tag(H100), gpu_tag(H200)) == ("h100", "h200")


def test_the_plan_reads_what_each_gpu_lacks_and_what_is_older_than_v4(shipped) -> None:  # type: ignore[no-untyped-def]
    assert resolve_gpu("H100", shipped.gpus()) == H100
    with pytest.raises(ValueError, match="several"):
        resolve_gpu("NVIDIA", shipped.gpus())
    runnable = ["rope", "kl-div"]
    lacking = plan(shipped, H100, "missing", runnable=runnable)
    # the H200's current rope runs are v4 (its v3 runs superseded); KL-div's H100 runs exist already
    assert set(lacking.operations) == {"rope"}
    rope_v4 = [r for r in shipped.current() if r.operation == "rope"]
    assert {r.bundle for r in rope_v4} == {"h200-rope-20261207-v4"}
    assert lacking.operations["rope"].case_regions == len({(r.workload, r.region) for r in rope_v4})
    older = plan(shipped, H200, "older", runnable=runnable)
    assert set(older.operations) == {"kl-div"}  # rope's v3 runs are superseded; KL-div's H200 runs are v3
    assert plan(shipped, H100, "older", runnable=runnable).operations == {}
    assert plan(shipped, H200, "older", runnable=["rope"]).other == \
        {"kl-div": sum(1 for r in shipped.current() if r.operation == "kl-div" and r.gpu == H200)}
    runner = runner_operations()
    assert older.steps(runner) == ["kl-div"]  # every adapter's line is due
    liger = {line for line, key in runner["kl-div"].items() if key == "liger"}
    older.operations["kl-div"].lines &= liger
    assert older.steps(runner) == ["kl-div:0:0:::::liger"]


def test_the_plan_takes_the_short_calls_first(shipped) -> None:  # type: ignore[no-untyped-def]
    kl_h200 = [r for r in shipped.current() if r.operation == "kl-div" and r.gpu == H200]
    cut = sorted(r.figure_ns for r in kl_h200)[len(kl_h200) // 2]
    short = plan(shipped, H200, "older", runnable=["kl-div"], under_ns=cut)
    expected = {(r.workload, r.region) for r in kl_h200 if r.figure_ns < cut}
    assert 0 < len(expected) < len(kl_h200)
    assert {(w, region) for w, rs in short.operations["kl-div"].regions.items() for region in rs} == expected
    assert plan(shipped, H200, "older", runnable=["kl-div"], under_ns=1).operations == {}
    on_h200 = [r for r in shipped.current() if r.gpu == H200]
    assert protocol_share(shipped, H200, "4", None) == (len(on_h200),
                                                        sum(1 for r in on_h200 if r.protocol_version == "4"))


def test_the_plan_orders_its_steps_cheapest_first(tmp_path: Path) -> None:
    """Session 6's H100 calls spent 900 s on two distillation losses (3–52 ms a call, 50 replays of 32 calls each)
    because the plan named its steps alphabetically: rope's cheap cases now come before them."""
    for name in ("h200-rope-20261207-v4", "h200-distill-cosine-loss-20261201-v3"):
        shutil.copytree(VERIFIED / name, tmp_path / name)
    lacking = plan(read_shipped(tmp_path, SUPERSESSIONS), H100, "missing", runnable=["rope", "distill-cosine-loss"])
    rope, distill = lacking.operations["rope"], lacking.operations["distill-cosine-loss"]
    assert distill.estimated_s > rope.estimated_s > 0
    current = read_shipped(tmp_path, SUPERSESSIONS).current()
    assert rope.runs == len({(r.workload, r.region, r.line) for r in current if r.operation == "rope"})
    slowest = max(r.figure_ns or 0 for r in current if r.operation == "distill-cosine-loss")
    assert distill.estimated_s >= slowest * 50 * 32 / 1e9  # at least its slowest run's sampled calls
    compiles: dict[tuple[str, str, str], float] = {}
    for r in current:
        if r.operation == "distill-cosine-loss" and r.compile_ns:
            key = (r.workload, r.region, r.line)
            compiles[key] = max(compiles.get(key, 0.0), r.compile_ns)
    assert compiles and distill.compile_ns == pytest.approx(sum(compiles.values()))  # torch.compile's, recorded
    assert lacking.steps(runner_operations()) == ["rope", "distill-cosine-loss"]  # not alphabetical


def _call(tmp: Path, budget: float, cases: Path) -> Call:
    return Call(budget_s=budget, work=tmp / "work", out=tmp / "out", cases=cases, dry_run=True,
                say_to=lambda line: None)


def test_a_dry_run_plans_each_step_and_the_next_call_resumes(shipped, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    written = write_cases(plan(shipped, H100, "missing", runnable=["rope"]), shipped, tmp_path / "cases")
    assert written["cases"] == 7
    left = run_campaign(_call(tmp_path, 500, tmp_path / "cases"), ["probe", "rope:0:2", "kl-div"])
    assert left == ["kl-div"]  # no KL-div case in this plan: the step fails and stays for a later call
    entries = read_call(tmp_path / "out")
    assert [(e["step"], e["outcome"]) for e in entries] == [("probe", "done"), ("rope:0:2", "done"),
                                                            ("kl-div", "failed")]
    log = (tmp_path / "out" / "run.log").read_text()
    assert "plan rope: 2 cases, 6 case-regions" in log and "-> h200-rope-" in log
    (tmp_path / "out" / "ledger.jsonl").unlink()
    assert run_campaign(_call(tmp_path, 500, tmp_path / "cases"), ["probe", "rope:0:2"]) == []
    assert [(e["step"], e["outcome"]) for e in read_call(tmp_path / "out")] == \
        [("probe", "done earlier"), ("rope:0:2", "done earlier")]  # by the earlier call on this machine
    assert "skip rope:0:2 (done in an earlier call)" in (tmp_path / "out" / "run.log").read_text()


def test_a_step_is_not_started_without_its_seconds(tmp_path: Path) -> None:
    left = run_campaign(_call(tmp_path, 50, tmp_path / "cases"), ["rope", "softmax"])
    assert left == ["rope", "softmax"]
    assert [(e["step"], e["outcome"]) for e in read_call(tmp_path / "out")] == [("rope", "not started")]


def _came_back(folder: Path, bundles: list[Path], entries: list[dict[str, object]]) -> Path:
    folder.mkdir(parents=True)
    with tarfile.open(folder / "bundles.tgz", "w:gz") as tar:
        for bundle in bundles:
            tar.add(bundle, arcname=f"bundles/{bundle.name}")
    (folder / "ledger.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    return folder


def test_shipping_verifies_supersedes_and_writes_the_ledger(tmp_path: Path) -> None:
    verified = tmp_path / "verified"
    verified.mkdir()
    shutil.copytree(VERIFIED / "h200-rope-20261201-v3", verified / "h200-rope-20261201-v3")
    supersessions = tmp_path / "supersessions.jsonl"
    supersessions.write_text("")
    entry = {"at": "2026-12-07T05:50:00Z", "gpu": H200, "tag": "h200", "step": "rope", "rc": 0, "outcome": "done",
             "seconds": 120.0, "bundles": ["h200-rope-20261207-v4"], "left_s": 150, "dry_run": False, "rehearsal": ""}
    cut = {**entry, "step": "layer-norm", "rc": 3, "outcome": "cut", "bundles": []}
    call = _came_back(tmp_path / "call1", [VERIFIED / "h200-rope-20261207-v4"], [entry, cut])
    shipment = ship([call], "test-v4", "2026-12-07T09:00:00Z", verified=verified, supersessions=supersessions,
                    ledgers=tmp_path / "ledgers")
    (row,) = shipment.bundles
    assert (row.name, row.gpu, row.runs, row.statuses["passed"]) == ("h200-rope-20261207-v4", H200, 63, 63)
    assert verify_directory(verified / "h200-rope-20261207-v4").digest == \
        verify_directory(VERIFIED / "h200-rope-20261207-v4").digest
    old = {json.loads(line)["old"] for line in supersessions.read_text().splitlines()}
    v3_runs = {r.digest for r in read_shipped(verified, tmp_path / "none.jsonl").runs
               if r.bundle == "h200-rope-20261201-v3"}
    assert old and old <= v3_runs and {s["reason"] for s in shipment.supersessions} == {STREAM_REASON}
    ledger = (tmp_path / "ledgers" / "test-v4.md").read_text()
    assert "| h200-rope-20261207-v4 | kernelindex-h200-runner-19 | NVIDIA H200 | 63 | 63 | 0 | — |" in ledger
    assert f"- {len(old)} older runs: {STREAM_REASON}" in ledger and "`layer-norm`" in ledger.split("Steps left")[1]
    again = ship([call], "test-v4", "2026-12-07T09:00:00Z", verified=verified, supersessions=supersessions,
                 ledgers=tmp_path / "ledgers")
    assert again.already == ["h200-rope-20261207-v4"] and again.bundles == []
    clash = tmp_path / "clash"
    shutil.copytree(VERIFIED / "h200-rms-norm-20261207-v4", clash / "h200-rope-20261207-v4")
    # another machine's bundle of the same name (a step re-run on a fresh machine) ships beside it, renamed
    other = ship([_came_back(tmp_path / "call2", [clash / "h200-rope-20261207-v4"], [entry])], "x",
                 "2026-12-07T09:00:00Z", verified=verified, supersessions=supersessions, ledgers=tmp_path / "ledgers")
    (renamed,) = other.bundles
    assert (renamed.name, renamed.came_back_as) == ("h200-rope-20261207-v4-b", "h200-rope-20261207-v4")
    assert verify_directory(verified / renamed.name).digest == verify_directory(clash / renamed.came_back_as).digest
    ledger = (tmp_path / "ledgers" / "x.md").read_text()
    assert "| h200-rope-20261207-v4-b (came back as h200-rope-20261207-v4) |" in ledger


def test_a_call_of_the_shell_drivers_is_read_from_its_log(tmp_path: Path) -> None:
    """The calls of the shell driver bench/gpu_v4.sh (before the engine; since removed) left run.log only: its step
    lines are the ledger."""
    (tmp_path / "run.log").write_text("NVIDIA H100 80GB HBM3, 570.86\n[3 s] plan probe\n[41 s] probe rc=0\n"
                                      "[290 s] softmax rc=3 (cut by its limit: finished cases are in its bundle)\n")
    assert [(e["step"], e["rc"], e["outcome"]) for e in read_call(tmp_path)] == [("probe", 0, "done"),
                                                                                  ("softmax", 3, "cut")]
    with pytest.raises(ShipError, match="neither ledger.jsonl nor run.log"):
        read_call(tmp_path / "nothing")


def test_a_rehearsed_call_comes_back_and_ships_with_its_ledger(tmp_path: Path) -> None:
    """plan → run (the CPU test device: real adapters, nominal times) → ship: the engine end to end, its bundle
    named by the tag, signed by the given key, shipped beside the catalog's with the call's ledger."""
    from kernelindex.campaigns.measure import prepare_from_bundles
    from kernelindex.trust.keys import generate

    private, _, key = generate("campaign-rehearsal", tmp_path / "keys")
    prepare_from_bundles([VERIFIED / "h200-softmax-20261201-v3-a"], tmp_path / "cases")  # the carry's cases
    call = Call(budget_s=400, work=tmp_path / "work", out=tmp_path / "out", cases=tmp_path / "cases", tag="h200",
                key=private, rehearse="H200", say_to=lambda line: None)
    assert run_campaign(call, ["probe", "softmax:0:1::forward:::baseline"]) == []
    (entry,) = [e for e in read_call(tmp_path / "out") if e["step"] != "probe"]
    assert entry["outcome"] == "done" and entry["bundles"] == [f"h200-softmax-{_day()}-v4"]
    verified = tmp_path / "verified"
    verified.mkdir()
    supersessions = tmp_path / "supersessions.jsonl"
    supersessions.write_text("")
    shipment = ship([tmp_path / "out"], "rehearsal", "2026-12-07T09:00:00Z", verified=verified,
                    supersessions=supersessions, ledgers=tmp_path / "ledgers")
    (row,) = shipment.bundles
    assert (row.runner, row.runs, row.statuses["passed"]) == (key.name, 1, 1)
    assert "softmax:0:1::forward:::baseline" in (tmp_path / "ledgers" / "rehearsal.md").read_text()


def _day() -> str:
    import time

    return time.strftime("%Y%m%d")


def test_a_gemm_selection_step_runs_through_the_engine(tmp_path: Path) -> None:
    """The GEMM & attention campaign's step (``OPS:SELECTION:IMPL[:SUFFIX[:LIMIT]]``) over a selection of a shipped
    GEMM bundle's cases: the smallest M, cuBLAS's line (torch.matmul), rehearsed on the CPU test device."""
    from kernelindex.campaigns.measure import load_cases, prepare_from_bundles
    from kernelindex.domain.manifests import digest_of
    from kernelindex.runner.verify import case_label
    from kernelindex.trust.keys import generate

    private, _, _ = generate("campaign-rehearsal", tmp_path / "keys")
    prepare_from_bundles([VERIFIED / "h200-gemm-n128-k2048-20261202-v3-cublas"], tmp_path / "cases-gemm")
    cases, _ = load_cases(tmp_path / "cases-gemm", "gemm-n128-k2048")
    smallest = min(cases, key=lambda w: w.spec.axes["m"])
    (tmp_path / "cases-gemm" / "gemm.json").write_text(json.dumps([["gemm-n128-k2048", case_label(smallest)]]))
    call = Call(budget_s=400, work=tmp_path / "work", out=tmp_path / "out", gemm_cases=tmp_path / "cases-gemm",
                tag="h100", key=private, rehearse="H100", say_to=lambda line: None)
    assert run_campaign(call, ["gemm-cublas"]) == []  # the batch: one selection step, one operation
    (entry,) = read_call(tmp_path / "out")
    assert entry["step"] == "gemm-n128-k2048:gemm:baseline:-cublas:240" and entry["outcome"] == "done"
    (name,) = entry["bundles"]
    assert name == f"h100-gemm-n128-k2048-{_day()}-v4-cublas"
    runs = verify_directory(tmp_path / "work" / "c" / "bundles" / name).runs()
    assert [(r.spec.workload, r.spec.status) for r in runs] == [(digest_of(smallest), "passed")]


def test_the_carry_holds_the_keys_by_gpu_and_the_plans_cases(shipped, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kernelindex.campaigns.carry import CarryError, build, parse_keys
    from kernelindex.campaigns.drive import key_for
    from kernelindex.trust.keys import generate

    generate("campaign-h200", tmp_path / "k200")
    generate("campaign-h100", tmp_path / "k100")
    keys = parse_keys([str(tmp_path / "k200"), f"h100={tmp_path / 'k100'}"])
    assert keys == {"keys": tmp_path / "k200", "keys-h100": tmp_path / "k100"}
    with pytest.raises(CarryError, match="no default key"):
        parse_keys([f"h100={tmp_path / 'k100'}"])
    with pytest.raises(CarryError, match="no runner.key"):
        parse_keys([str(tmp_path)])
    write_cases(plan(shipped, H100, "missing", runnable=["rope"]), shipped, tmp_path / "plan")
    carried = build(tmp_path / "carry", keys, cases=tmp_path / "plan", download=False, gemm_attention=False,
                    kernelbench=False)
    assert carried["cases"] == 7 and carried["keys"] == ["keys", "keys-h100"] and float(carried["mib"]) < 64
    assert key_for("h100", tmp_path / "carry") == tmp_path / "carry" / "keys-h100" / "runner.key"
    assert key_for("h200", tmp_path / "carry") == tmp_path / "carry" / "keys" / "runner.key"
    carried_cases = (tmp_path / "carry" / "cases" / "cases.jsonl").read_bytes()
    assert carried_cases == (tmp_path / "plan" / "cases.jsonl").read_bytes()
    assert cases_for("h100", tmp_path / "carry") == tmp_path / "carry" / "cases"


def test_a_gpu_with_its_own_plan_measures_it(shipped, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from kernelindex.campaigns.carry import CarryError, build, parse_cases, parse_keys
    from kernelindex.trust.keys import generate

    generate("campaign-h200", tmp_path / "k200")
    write_cases(plan(shipped, H100, "missing", runnable=["rope"]), shipped, tmp_path / "plan-h100")
    write_cases(plan(shipped, H100, "missing", runnable=["embedding"]), shipped, tmp_path / "plan-h200")
    with pytest.raises(CarryError, match="no default plan"):
        parse_cases([f"h100={tmp_path / 'plan-h100'}"])
    with pytest.raises(CarryError, match="no cases.jsonl"):
        parse_cases([str(tmp_path)])
    plans = parse_cases([str(tmp_path / "plan-h200"), f"h100={tmp_path / 'plan-h100'}"])
    carried = build(tmp_path / "carry", parse_keys([str(tmp_path / "k200")]), cases=plans, download=False,
                    gemm_attention=False, kernelbench=False)
    assert carried["cases"] == len((tmp_path / "plan-h200" / "cases.jsonl").read_text().splitlines())
    assert carried["cases_h100"] == 7
    assert cases_for("h100", tmp_path / "carry") == tmp_path / "carry" / "cases-h100"
    assert cases_for("h200", tmp_path / "carry") == tmp_path / "carry" / "cases"
    own = (tmp_path / "carry" / "cases-h100" / "regions.json").read_text()
    assert own == (tmp_path / "plan-h100" / "regions.json").read_text()


def test_the_command_runs_the_engine_and_names_a_bad_step(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kernelindex.cli import app

    runner = CliRunner()
    where = ["--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"), "--dry-run"]
    bad = runner.invoke(app, ["runner", "campaign", "run", "300", "probe", "rope:x", *where])
    assert bad.exit_code == 2 and "SKIP 'x' is not a whole number" in bad.output
    short = runner.invoke(app, ["runner", "campaign", "run", "30", "probe", "rope", *where])
    assert short.exit_code == 0 and "left for the next call: probe rope" in short.output
    assert [e["outcome"] for e in read_call(tmp_path / "out")] == ["not started"]
