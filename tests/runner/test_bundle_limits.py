"""Bundle checks read nothing they should not (issue 8, defect 9): symlinks and non-regular files
are refused from their directory entries, before any byte is read, and every file has a size cap."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from kernelindex.trust import bundles
from kernelindex.trust.bundles import BundleError, bundled_bundles, verify_directory


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(bundled_bundles()[0], root)
    verify_directory(root)  # intact
    return root


def _a_sample(root: Path) -> Path:
    return next((root / "samples").iterdir())


def test_a_symlinked_sample_is_refused_without_reading_its_target(bundle: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as handle:  # sparse: 3 GB on paper, nothing on disk
        handle.truncate(3 * 1024**3)
    victim = _a_sample(bundle)
    victim.unlink()
    victim.symlink_to(big)
    started = time.perf_counter()
    with pytest.raises(BundleError, match="a symlink; a bundle holds only regular files"):
        verify_directory(bundle)
    assert time.perf_counter() - started < 5


def test_a_symlinked_index_or_directory_is_refused(bundle: Path, tmp_path: Path) -> None:
    (bundle / "samples-link").symlink_to(bundle / "samples", target_is_directory=True)
    with pytest.raises(BundleError, match="a symlink"):
        verify_directory(bundle)
    (bundle / "samples-link").unlink()
    elsewhere = tmp_path / "bundle.json"
    (bundle / "bundle.json").rename(elsewhere)
    (bundle / "bundle.json").symlink_to(elsewhere)
    with pytest.raises(BundleError, match="a symlink"):
        verify_directory(bundle)


def test_a_fifo_is_refused_without_blocking(bundle: Path) -> None:
    os.mkfifo(bundle / "samples" / "pipe.json")
    with pytest.raises(BundleError, match="not a regular file"):
        verify_directory(bundle)


def test_an_oversized_file_is_refused_before_reading(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = _a_sample(bundle)
    monkeypatch.setattr(bundles, "MAX_SAMPLES_BYTES", victim.stat().st_size - 1)
    with pytest.raises(BundleError, match="over the .*-byte limit"):
        verify_directory(bundle)


def test_the_shipped_bundles_fit_the_caps() -> None:
    for path in bundled_bundles():
        verify_directory(path)
        for entry in path.rglob("*"):
            if entry.is_file():
                assert entry.stat().st_size <= bundles.MAX_SAMPLES_BYTES
