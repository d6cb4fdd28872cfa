"""The cyclic garbage collector is paused while an import publishes, and only then."""

from __future__ import annotations

import gc
import threading

from kernelindex.catalog.collector import collector_paused


def test_the_collector_resumes_after_the_last_pause_in_progress() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause is still in progress
    assert gc.isenabled()


def test_a_pause_that_raises_resumes_the_collector() -> None:
    try:
        with collector_paused():
            raise RuntimeError("the import failed")
    except RuntimeError:
        pass
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_in_two_threads_end_with_the_collector_running() -> None:
    inside, release = threading.Event(), threading.Event()

    def publish_elsewhere() -> None:
        with collector_paused():
            inside.set()
            release.wait(5)

    other = threading.Thread(target=publish_elsewhere)
    with collector_paused():
        other.start()
        inside.wait(5)
    assert not gc.isenabled()  # the other thread's publication is still in progress
    release.set()
    other.join(5)
    assert gc.isenabled()
