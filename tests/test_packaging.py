"""A non-editable install carries everything the site serves: the registry, templates, static files,
the bundled data and the runner documentation shown under /docs#runner (docs/design.md §10)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK_DOCS_PAGE = """
import sys
import kernelindex
from fastapi.testclient import TestClient
from kernelindex.catalog.db import open_catalog
from kernelindex.web.app import create_app

assert kernelindex.__file__.startswith(sys.argv[1]), kernelindex.__file__
catalog = open_catalog("sqlite:///" + sys.argv[2])
page = TestClient(create_app(catalog)).get("/docs")
assert page.status_code == 200, page.status_code
assert 'class="runner-doc"' in page.text and "ki verify" in page.text, "no runner section on /docs"
print("runner section present")
"""


def test_installed_wheel_serves_the_runner_documentation(tmp_path: Path) -> None:
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(ROOT)], check=True, cwd=tmp_path)
    (wheel,) = wheels.glob("kernelindex-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kernelindex/data/docs/runner.md" in names
    assert "kernelindex/web/templates/docs.html" in names
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, cwd=tmp_path)
    # The installed copy comes first on the path; the test environment supplies the dependencies.
    result = subprocess.run(
        [sys.executable, "-c", CHECK_DOCS_PAGE, str(site), str(tmp_path / "catalog.sqlite")],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, cwd=tmp_path, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "runner section present" in result.stdout
