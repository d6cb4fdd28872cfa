"""Implementations that do another region's work (issue 19 item 4): Liger's fused losses compute the
gradient inside their forward. The registry declares it once (registry/region_work.yaml); the forward
rows — verified and imported from Liger's own benchmarks alike — and the forward ranking say so, with a
link to the fair comparison (forward+backward). And a failed CUDA-graph capture is said in words."""

from __future__ import annotations

from fastapi.testclient import TestClient
from pagetext import text_of
from web_helpers import FIXED_NOW, make_app

from kernelindex import registry
from kernelindex.catalog.db import Catalog
from kernelindex.policy.capture import capture_failure_sentence
from kernelindex.readmodel.labels import implementation_slug
from kernelindex.readmodel.loading import load_operation
from kernelindex.readmodel.operations import build_operation_page
from kernelindex.readmodel.region_work import BACKWARD_WORK_NOTE, FORWARD_WORK_NOTE, forward_work_note
from kernelindex.trust.bundles import bundled_bundles, publish_bundle
from kernelindex.trust.keys import bundled_runner_keys

WORKLOAD = {"batch": 4, "seq": 2048, "vocab": 8192}  # a jsd case with fully sampled runs in every region
H200 = "NVIDIA H200 SXM 141GB"


def _publish(catalog: Catalog, *names: str) -> None:
    bundled_runner_keys(catalog)
    for path in bundled_bundles():
        if path.name in names:
            publish_bundle(catalog, path)


def _mode(view: dict) -> str:
    return next(c["mode"] for c in view["cohorts"] if c["selected"])


def _views(client: TestClient, slug: str, axes: dict[str, int]) -> dict[tuple[str, str], dict]:
    """Every cohort view of the operation's workload with these axes, by (GPU, region)."""
    page = client.get(f"/api/v1/operations/{slug}").json()
    key = next(w["key"] for w in page["workloads"] if w["axes"] == axes and set(w["dtypes"].values()) == {"fp32"})
    base = f"/api/v1/operations/{slug}?workload={key}"
    views = [client.get(f"{base}&cohort={c['key']}").json() for c in client.get(base).json()["cohorts"]]
    runner = [v for v in views if not v["cohort_line"]["profile"].startswith("Source")]
    return {(v["cohort_line"]["gpu"], _mode(v)): v for v in runner}


def test_forward_rows_and_ranking_say_the_forward_also_computes_the_gradient(liger_catalog: Catalog) -> None:
    _publish(liger_catalog, "h200-jsd-20261201", "h200-kl-div-20261130")
    with TestClient(make_app(liger_catalog)) as client:
        views = _views(client, "jsd", WORKLOAD)
        forward = views[(H200, "forward")]
        noted = {r["implementation"]["slug"]: r["region_note"] for r in forward["ranked"]}
        assert noted == {"liger-kernel-jsd": FORWARD_WORK_NOTE, "kernelindex-jsd": None, "torch-compile-jsd": None}
        [note] = forward["ranking_notes"]
        assert note["code"] == "FORWARD_COMPUTES_GRADIENT"
        assert note["sentence"].startswith("In this forward ranking, Liger also computes the gradient inside")
        fair = client.get("/api/v1" + note["url"]).json()  # the link lands on the same GPU's forward+backward
        assert note["url"].startswith("/operations/jsd?") and fair == views[(H200, "forward+backward")]
        assert not fair["ranking_notes"] and not any(r["region_note"] for r in fair["ranked"])  # like for like
        liger = next(r for r in forward["ranked"] if r["implementation"]["slug"] == "liger-kernel-jsd")
        assert "This forward also computes the gradient (its forward kernel computes the gradient of the input " \
               "beside the loss; the backward only scales it); compare forward+backward." in liger["rationale"]
        html = client.get(forward["json_url"].replace("/api/v1", "")).text
        assert "In this forward ranking, Liger also computes the gradient" in text_of(html)
        assert f'<p class="small row-note">{FORWARD_WORK_NOTE}</p>' in html
        assert f'href="{note["url"]}"' in html.replace("&amp;", "&")
        run = text_of(client.get(f"/runs/{liger['run_id']}").text)
        assert "Timed region This forward also computes the gradient (its forward kernel" in run
    _imported_rows_carry_it_too(liger_catalog)


def _imported_rows_carry_it_too(catalog: Catalog) -> None:
    """Liger's own benchmark rows of the same implementation line (source-native cohorts) say it too, in
    the forward and the backward (which only scales), never in forward+backward; Liger's KL-div computes
    its gradient in the backward and says nothing."""
    for slug, declared in (("jsd", True), ("kl-div", False)):
        data = load_operation(catalog, slug)
        native = [r for r in data.runs if r.eligible and data.protocols[r.protocol].spec.native
                  and implementation_slug(data.implementations[r.implementation]).startswith("liger-kernel-")]
        regions = {data.protocols[r.protocol].spec.timed_region for r in native}
        assert "forward" in regions and len(regions) > 1, slug
        for run in native:
            region = data.protocols[run.protocol].spec.timed_region
            expected = {"forward": FORWARD_WORK_NOTE, "backward": BACKWARD_WORK_NOTE}.get(region) if declared else None
            assert forward_work_note(data, run) == expected, (slug, region)
        page = build_operation_page(data, workload=None, cohort=None, now=FIXED_NOW)
        mode = next(c.mode for c in page.cohorts if c.selected)
        assert bool(page.ranking_notes) == (declared and mode in ("forward", "backward")), slug


def test_every_declared_line_is_a_known_implementation_line() -> None:
    """A typo in region_work.yaml would silently say nothing: every key names a line of the Liger source
    registry (the runner's adapters use the same line names)."""
    known = set(registry.source_mapping("liger")["implementations"])
    declared = set(registry.forward_computes_gradient())
    assert declared <= known and len(declared) == 17
    assert "liger-kernel-kl-div" in known and "liger-kernel-kl-div" not in declared


def test_a_failed_capture_is_said_in_words_and_kept_verbatim(empty_catalog: Catalog) -> None:
    _publish(empty_catalog, "h200-fused-linear-cross-entropy-20261201")
    data = load_operation(empty_catalog, "fused-linear-cross-entropy")
    recorded = next(failure for r in data.runs if "cudaErrorStreamCapture" in (failure := r.spec.timing.raw.get(
        "capture_failure", "")))
    run = next(r for r in data.runs if r.spec.timing.raw.get("capture_failure") == recorded)
    with TestClient(make_app(empty_catalog)) as client:
        dossier = client.get(f"/api/v1/runs/{run.run_id}").json()
        assert dossier["capture_failure"] == capture_failure_sentence(recorded)
        assert dossier["timing"]["raw"]["capture_failure"] == recorded  # the raw text stays in the dossier
        html = text_of(client.get(f"/runs/{run.run_id}").text)
    said = ("The call could not be captured in a CUDA graph: an operation inside the call is not allowed while a "
            "CUDA graph is being recorded")
    timing_line = html[html.index("Timing method"):html.index("Host time per call")]
    assert said in timing_line and "includes the host's launch of the call" in timing_line
    assert "cudaError" not in timing_line and "Error" not in timing_line
    assert "capture_failure=AcceleratorError: CUDA error" in html  # the raw text, under "As the source wrote it"


def test_a_backward_that_only_scales_is_shown_aside_never_ranked_headlined_or_a_record(
        liger_catalog: Catalog) -> None:
    """Issue 43 item 5: Liger's GRPO loss backward only scales the gradient its forward computed. It is shown
    below its verified backward cohort's ranking, labelled and unranked ("—"), with no floor ratio; it is never
    the cohort's #1, a headline card (the "Fastest verified" card seen from Liger's own benchmark cohort), a
    record holder or a margin; the floor panel's record is the fastest ranked row."""
    from kernelindex.readmodel.operation_model import operation_model
    from kernelindex.readmodel.rows import ASIDE_SENTENCE

    _publish(liger_catalog, "h200-fused-linear-grpo-loss-token-20261201")
    data = load_operation(liger_catalog, "fused-linear-grpo-loss-token")
    model = operation_model(data, FIXED_NOW)
    cohorts = model.cohorts
    backward = [c for c in cohorts.values()
                if c.eligible and data.protocols[c.protocol].spec.timed_region == "backward"]
    verified = next(c for c in backward if c.aside and c.leader and c.leader.evidence == "verified")
    liger = {a.id for a in verified.aside}
    assert all(implementation_slug(data.implementations[verified.run(d).implementation]).startswith("liger-kernel-")
               for d in liger)
    rows = model.rows(verified)
    aside = [r for r in rows if r.digest in liger]
    assert aside and all(r.rank == 0 and r.rank_label == "—" and r.floor_ratio is None for r in aside)
    assert all(r.region_note == BACKWARD_WORK_NOTE and r.rationale[0] == ASIDE_SENTENCE for r in aside)
    assert rows[0].digest not in liger and rows[0].rank == 1 and verified.leader.digest not in liger
    assert not any(e.holder in liger for e in model.records(verified))
    panel = model.floor_view(verified)
    assert panel is not None and panel.record_ratio == rows[0].floor_ratio and panel.record_ratio > 1
    native = next(c for c in backward if c.workload == verified.workload and c.key != verified.key)
    cards = model.headline(native)
    assert not any(card.row.digest in liger for card in cards)
