"""Opening a catalog whose schema is the newest needs no Alembic (issue 46 item 4: importing it and reading
its scripts cost every ``ki`` lookup ~0.5 s); an older or new one is still migrated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.script import ScriptDirectory

from kernelindex.catalog.db import _alembic_config, head_revision, open_catalog


def test_the_head_read_from_the_file_names_is_alembics_head() -> None:
    assert head_revision() == ScriptDirectory.from_config(_alembic_config()).get_current_head()


def test_a_catalog_at_head_opens_without_importing_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'catalog.sqlite'}"
    open_catalog(url).dispose()  # a new catalog: migrated to head
    probe = ("import sys; from kernelindex.catalog.db import open_catalog; "
             f"open_catalog({url!r}).dispose(); print(sorted(m for m in sys.modules if m.startswith('alembic')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
