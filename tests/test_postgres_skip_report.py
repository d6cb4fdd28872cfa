"""Without KERNELINDEX_TEST_DATABASE_URL the PostgreSQL tests are counted as skipped, with the reason,
instead of vanishing from the count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_postgres_tests_report_as_skipped_with_the_reason() -> None:
    env = {k: v for k, v in os.environ.items() if k != "KERNELINDEX_TEST_DATABASE_URL"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs",
         "tests/catalog/test_publish_lifecycle_export.py::test_a_run_needs_its_references"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "1 passed, 1 skipped" in out
    assert "PostgreSQL tests need KERNELINDEX_TEST_DATABASE_URL" in out
    assert "1 PostgreSQL tests skipped: set KERNELINDEX_TEST_DATABASE_URL" in out
