"""Issue 22 item 5: rows that would read alike because two runners measured the same thing name the
runner that tells them apart — in compare, search and the operation page's cards and cohort line,
HTML and JSON twin alike (embedding's H200 forward cohorts: kernelindex-h200-runner-7 and the independent
check; rope's were both superseded by runner-19's protocol v4 runs, so rope has one runner cohort now)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from kernelindex.readmodel.labels import Shown, tell_apart

RUNNERS = {"kernelindex-h200-runner-7", "independent-check-runner"}


def _alike_cohorts(client: TestClient) -> list[dict[str, Any]]:
    """Embedding's two H200 forward runner cohorts of the default workload (they differ by runner)."""
    page = client.get("/api/v1/operations/embedding").json()
    alike = [c for c in page["cohorts"] if c["gpu"].startswith("NVIDIA H200") and c["mode"] == "forward"
             and not c["native"]]
    assert len(alike) == 2 and {c["distinct"] for c in alike} == {f"runner {r}" for r in RUNNERS}
    return alike


def test_tell_apart_names_the_runner_then_the_protocol_and_nothing_for_a_one_off() -> None:
    shown = [Shown("H200 · forward", "runner-a", "sha256:" + "1" * 64),
             Shown("H200 · forward", "runner-b", "sha256:" + "2" * 64),
             Shown("H200 · forward", "runner-b", "sha256:" + "3" * 64),
             Shown("A100 · forward", None, "sha256:" + "4" * 64),
             Shown("B200 · forward", None, "sha256:" + "5" * 64),
             Shown("B200 · forward", None, "sha256:" + "5" * 64)]
    assert tell_apart(shown) == ["runner runner-a", "runner runner-b · protocol 222222222222",
                                 "runner runner-b · protocol 333333333333", None, None, None]


def test_compare_says_different_runners_measured_them(client: TestClient) -> None:
    runs = [c["best_run_id"] for c in _alike_cohorts(client)]
    query = "&".join(f"run={r}" for r in runs)
    page = client.get(f"/api/v1/compare?{query}").json()
    assert page["winner"] is None and page["difference"]["field"] == "runner"
    assert set(page["difference"]["values"]) == RUNNERS
    assert page["verdict"].startswith("Different runners measured them; no winner")
    assert {r["runner"] for r in page["runs"]} == RUNNERS
    labels = [r["cohort_label"] for r in page["runs"]]
    assert len(set(labels)) == 2 and all(label.endswith(f"runner {r['runner']}")
                                          for label, r in zip(labels, page["runs"], strict=True))
    html = client.get(f"/compare?{query}").text
    assert "Different runners measured them" in html and '<th scope="row">Runner</th>' in html
    assert all(r in html for r in RUNNERS)


def test_search_headings_name_the_runner_of_look_alike_cohorts(client: TestClient) -> None:
    query = "embedding batch=32 seq=512 vocab=1024 hidden=768 h200"
    answer = client.get("/api/v1/search", params={"q": query}).json()
    forward = [c for c in answer["exact"] if c["mode"] == "forward" and c["rows"]]
    assert {c["runner"] for c in forward} == RUNNERS
    assert all(c["label"].endswith(f"runner {c['runner']}") for c in forward)
    assert all(row["runner"] == c["runner"] for c in answer["exact"] for row in c["rows"])
    assert len({c["label"] for c in answer["exact"]}) == len(answer["exact"])  # every listed cohort reads differently
    html = client.get("/search", params={"q": query}).text
    assert all(f"KernelIndex runner · runner {r}" in html for r in RUNNERS)


def test_operation_page_cards_and_cohort_line_name_their_runner(client: TestClient) -> None:
    """The two runners' cohorts rank different statistics (runner 7's v3 device time, the independent check's
    CUDA-event time), so no card sets one beside the other (issue 43 item 2): each page's card is its own
    cohort's fastest, its runner named on the card's row, the cohort line and in Current records."""
    for cohort in _alike_cohorts(client):
        page = client.get(f"/api/v1/operations/embedding?cohort={cohort['key']}").json()
        runner = cohort["distinct"].removeprefix("runner ")
        assert page["cohort_line"]["runner"] == runner
        assert {row["runner"] for row in page["ranked"]} == {runner}
        (card,) = page["headline"]
        assert card["title"].startswith("Fastest") and card["row"]["runner"] == runner
        html = client.get(f"/operations/embedding?cohort={cohort['key']}").text
        assert f"<dt>Runner</dt><dd>{runner}</dd>" in html
        assert all(f'<span class="tag">runner {r}</span>' in html for r in RUNNERS)  # Current records tell them apart