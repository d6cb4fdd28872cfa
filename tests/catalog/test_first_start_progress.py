"""A first start is never silent and ends with a short summary (issue 46 item 5): a long step says it is
still at work every few seconds, and the verified bundles are counted in one line instead of one each."""

from __future__ import annotations

import threading

from kernelindex.bootstrap import heartbeat, summary_lines


def test_a_long_step_says_it_is_still_working_until_it_ends() -> None:
    said: list[str] = []
    twice = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 2:
            twice.set()

    with heartbeat(say, "importing the tables", every_s=0.01):
        assert twice.wait(30), "no progress line within 30 s"
    assert all(line.startswith("  … still importing the tables (") and line.endswith(" s)") for line in said)


def test_the_summary_counts_the_verified_bundles_in_one_line_and_keeps_a_refusal() -> None:
    done = ["kernelindex-export: 7109 runs", "verified bundle a: 12 new runs", "verified bundle b: 1000 new runs",
            "verified bundle c refused: its digest does not match", "shipped supersessions: 3 recorded"]
    assert summary_lines(done) == ["kernelindex-export: 7109 runs",
                                   "verified bundle c refused: its digest does not match",
                                   "shipped supersessions: 3 recorded",
                                   "verified bundles: 2 published, 1,012 new runs"]
