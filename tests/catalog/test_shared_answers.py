"""The shared store of site-wide answers (``catalog/shared_answers.py``, issue 50): one worker claims an answer
at a stamp and stores it, the others read it; a lapsed claim is taken over once; older versions are dropped."""

from __future__ import annotations

import threading
import time

from kernelindex.catalog import shared_answers
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.shared_answers import Claimed, Stored

ANSWER = Stored(200, ((b"content-type", b"application/json"), (b"etag", b'W/"abc"')), b'{"a": 1}', b'W/"abc"')


def test_the_first_claims_the_others_wait_then_read_the_stored_answer(empty_catalog: Catalog) -> None:
    place = ("records-key", "version-7")
    mine = shared_answers.obtain(empty_catalog, place, 7, stale_after_s=60)
    assert isinstance(mine, Claimed) and mine.mine
    other = shared_answers.obtain(empty_catalog, place, 7, stale_after_s=60)
    assert isinstance(other, Claimed) and not other.mine and other.at == mine.at
    assert shared_answers.answered(empty_catalog, [place, ("other", "x")]) == {place: mine.at}
    shared_answers.store(empty_catalog, place, 7, ANSWER)
    assert shared_answers.obtain(empty_catalog, place, 7, stale_after_s=60) == ANSWER
    assert shared_answers.answered(empty_catalog, [place]) == {place: ANSWER}


def test_concurrent_workers_make_one_claim(empty_catalog: Catalog) -> None:
    place = ("home-key", "version-3")
    results: list[Stored | Claimed] = []
    start = threading.Barrier(6)

    def worker() -> None:
        start.wait()
        results.append(shared_answers.obtain(empty_catalog, place, 3, stale_after_s=60))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(isinstance(r, Claimed) and r.mine for r in results) == [False] * 5 + [True]


def test_a_lapsed_claim_is_taken_over_once_and_a_given_up_one_at_once(empty_catalog: Catalog) -> None:
    place = ("challenges-key", "version-4")
    first = shared_answers.obtain(empty_catalog, place, 4, stale_after_s=60)
    assert isinstance(first, Claimed) and first.mine
    time.sleep(0.05)
    taken = shared_answers.obtain(empty_catalog, place, 4, stale_after_s=0.01)
    assert isinstance(taken, Claimed) and taken.mine and taken.at > first.at
    again = shared_answers.obtain(empty_catalog, place, 4, stale_after_s=60)  # the new claim is fresh
    assert isinstance(again, Claimed) and not again.mine
    shared_answers.release(empty_catalog, place)  # nothing to keep (an error page): the next one claims it
    released = shared_answers.obtain(empty_catalog, place, 4, stale_after_s=60)
    assert isinstance(released, Claimed) and released.mine


def test_storing_a_newer_version_drops_the_older_ones(empty_catalog: Catalog) -> None:
    old, new = ("feed-key", "version-5"), ("feed-key", "version-6")
    shared_answers.obtain(empty_catalog, old, 5, stale_after_s=60)
    shared_answers.store(empty_catalog, old, 5, ANSWER)
    shared_answers.store(empty_catalog, new, 6, ANSWER)  # stored without a claim: kept all the same
    assert shared_answers.answered(empty_catalog, [old, new]) == {new: ANSWER}


def test_a_task_is_claimed_once_per_place(empty_catalog: Catalog) -> None:
    assert shared_answers.claim_once(empty_catalog, ("warm", "version-9"), 9)
    assert not shared_answers.claim_once(empty_catalog, ("warm", "version-9"), 9)
    assert shared_answers.claim_once(empty_catalog, ("warm", "version-10"), 10)
