"""The fast path of ``ki search`` and ``ki show operation`` (``cli/fast_lookup.py``, issue 46 item 4) prints what
the full path printed — the same bytes, errors and exit code — from the answer the full path kept, and only while
that answer is still the answer: another catalog version, another code form or a run gone stale since, and the
full path answers again. Its process imports neither SQLAlchemy nor pydantic nor the read model."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelindex.catalog.db import Catalog
from kernelindex.catalog.lookup_form import same_staleness, stale_threshold
from kernelindex.cli import app, fast_lookup
from kernelindex.cli.console import console, errors
from kernelindex.cli.fast_lookup import answered, parse

WIDTH = 100
LOOKUPS = [
    ["search", "rope", "seq=2048", "hidden=8192", "a100"],
    ["search", "RoPE,", "seq", "2048,", "hidden", "8192,", "bf16,", "on", "H100"],
    ["search", "rms", "norm", "h100", "bf16"],
    ["search", "gemm", "n=4096", "k=4096", "gpu:h100"],
    ["search", "gqa", "paged", "decode", "h32", "kv8"],
    ["search", "kernelbench", "relu"],
    ["search", "rope", "seq=2048", "florp"],  # partial: the answer for the rest, exit 1
    ["search", "rop"],
    ["search"],  # every operation
    ["show", "operation", "rope"],
    ["show", "rms-norm"],
    ["show", "operation", "gemm-n4096-k4096"],
    ["show", "gqa-paged-decode-h32-kv8-d128-ps1"],
    ["show", "kernelbench-1-19-relu"],
    ["show", "rope", "--gpu", "h100"],
    ["show", "operation", "rope", "--gpu=b200"],
    ["show", "rope", "--workload", "nope"],
    ["show", "operation", "ropee"],  # a typo: refused with the page's suggestion
    ["show", "no-such-operation"],
]
HEAVY = ("sqlalchemy", "pydantic", "alembic", "yaml", "typer", "kernelindex.catalog.models", "kernelindex.catalog.db",
         "kernelindex.readmodel.operation_model", "kernelindex.readmodel.loading", "kernelindex.resolve",
         "kernelindex.services", "kernelindex.views", "kernelindex.domain.manifests")


@pytest.fixture
def sqlite_catalog(catalog: Catalog, tmp_path: Path) -> Iterator[str]:
    """A copy of the session's catalog (this test writes its version), as a ``--database`` URL."""
    if catalog.engine.dialect.name != "sqlite":
        pytest.skip("the fast path reads SQLite catalogs only")
    path = tmp_path / "copy.sqlite"
    source, copy = sqlite3.connect(catalog.engine.url.database), sqlite3.connect(path)
    source.backup(copy)
    source.close()
    copy.close()
    yield f"sqlite:///{path}"


@pytest.fixture(autouse=True)
def fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "_width", WIDTH)
    monkeypatch.setattr(errors, "_width", WIDTH)
    monkeypatch.delenv("KERNELINDEX_API", raising=False)


def full(argv: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, argv)
    return result.exit_code, result.stdout, result.stderr


def fast(argv: list[str], now: datetime | None = None) -> tuple[int | None, str, str]:
    with CliRunner().isolation() as (out, err, _):
        code = answered(argv, now)
        return code, out.getvalue().decode(), err.getvalue().decode()


def test_the_fast_path_prints_what_the_full_path_printed(sqlite_catalog: str) -> None:
    for lookup in LOOKUPS:
        argv = [*lookup, "--database", sqlite_catalog]
        assert fast(argv)[0] is None, lookup  # nothing kept yet
        printed = full(argv)
        assert printed[1] or printed[2], lookup
        assert fast(argv) == printed, lookup
        assert full(argv) == printed, lookup  # the full path answers alike after it kept its answer
    codes = {tuple(lookup): fast([*lookup, "--database", sqlite_catalog])[0] for lookup in LOOKUPS}
    assert codes[("search", "rope", "seq=2048", "florp")] == 1 and codes[("show", "operation", "ropee")] == 1
    assert codes[("show", "operation", "rope")] == 0


def test_another_version_form_or_staleness_goes_to_the_full_path(sqlite_catalog: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["show", "rope", "--database", sqlite_catalog]
    full(argv)
    now = datetime.now(UTC)
    assert fast(argv, now)[0] == 0
    # the next run to turn stale: just before, the kept answer holds; just after, it does not
    with sqlite3.connect(sqlite_catalog.removeprefix("sqlite:///")) as conn:
        turns = conn.execute("SELECT min(observed_at) FROM runs WHERE observed_at >= ?",
                             (stale_threshold(now),)).fetchone()[0]
    flip = datetime.fromisoformat(turns).replace(tzinfo=UTC) + timedelta(days=180)
    assert fast(argv, flip)[0] == 0 and fast(argv, flip + timedelta(microseconds=1))[0] is None
    assert fast(argv, now - timedelta(days=3650))[0] is None  # a clock put back: older runs were fresh then
    monkeypatch.setattr(fast_lookup, "lookup_form", lambda: "another-form")
    assert fast(argv, now)[0] is None
    monkeypatch.undo()
    with sqlite3.connect(sqlite_catalog.removeprefix("sqlite:///")) as conn:
        conn.execute("UPDATE catalog_state SET version = version + 1")
    assert fast(argv, now)[0] is None
    full(argv)  # the full path keeps it again, at the new version, and drops the older version's rows
    assert fast(argv, now)[0] == 0
    with sqlite3.connect(sqlite_catalog.removeprefix("sqlite:///")) as conn:
        assert conn.execute("SELECT count(DISTINCT version) FROM lookup_answers").fetchone()[0] == 1


def test_same_staleness_is_the_policys_staleness() -> None:
    now = datetime(2026, 12, 7, 12, tzinfo=UTC)
    edge = stale_threshold(now)  # a run observed exactly 180 days before now is not yet stale (is_stale: ">")
    assert same_staleness(None, edge, now) and not same_staleness(edge, None, now)
    assert same_staleness(None, None, now)


@pytest.mark.parametrize("argv", [
    ["search", "rope", "--json"], ["search", "rope", "--api", "http://x"], ["search", "--help"],
    ["show", "run", "98eb698d937fc733"], ["show", "operation"], ["show", "rope", "--json"],
    ["show", "rope", "--page", "2"], ["show", "rope", "--gpu", "h100", "--gpu", "b200"], ["show", "rope", "--gpu"],
    ["show", "rope", "-h"], ["search", "rope", "--", "x"], ["records"], ["resolve", "rope"], [],
])
def test_only_the_lookups_it_reads_are_its_own(argv: list[str]) -> None:
    assert parse(argv) is None


def test_the_command_line_reads_as_the_command_reads_it() -> None:
    assert parse(["search", " rope ", "", "seq=2048", "--database=sqlite:///c"]) == fast_lookup.Lookup(
        "search", " rope  seq=2048", {"database": "sqlite:///c"})
    assert parse(["show", "--gpu", "h100", "rope"]) == fast_lookup.Lookup("show", "rope", {"gpu": "h100"})
    assert parse(["show", "operation", "run"]) == fast_lookup.Lookup("show", "run", {})


def test_a_server_or_postgresql_catalog_is_not_read(sqlite_catalog: str, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["show", "rope", "--database", sqlite_catalog]
    full(argv)
    monkeypatch.setenv("KERNELINDEX_API", "http://127.0.0.1:9")
    assert fast(argv)[0] is None
    monkeypatch.delenv("KERNELINDEX_API")
    assert fast(["show", "rope", "--database", "postgresql://u@h/db"])[0] is None


def test_the_fast_path_imports_no_catalog_model_nor_read_model(sqlite_catalog: str) -> None:
    for lookup in (["search", "rope", "seq=2048", "hidden=8192", "a100"], ["show", "operation", "rope"]):
        argv = [*lookup, "--database", sqlite_catalog]
        printed = full(argv)
        probe = ("import json, sys\nfrom kernelindex.cli import main\n"
                 f"sys.argv = ['ki', *{argv!r}]\n"
                 "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
                 "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                              env={"COLUMNS": str(WIDTH), "PATH": ""}, check=False)
        code, modules = json.loads(done.stderr.strip().splitlines()[-1])
        assert code == printed[0] and done.stdout == printed[1]
        heavy = [m for m in modules if m.startswith(HEAVY)]
        assert heavy == [], heavy


def test_a_catalog_another_process_writes_keeps_nothing_and_answers_at_once(sqlite_catalog: str) -> None:
    argv = ["show", "operation", "rope", "--database", sqlite_catalog]
    printed = full(argv)
    with sqlite3.connect(sqlite_catalog.removeprefix("sqlite:///"), isolation_level=None) as conn:
        conn.execute("DELETE FROM lookup_answers")
        conn.execute("BEGIN IMMEDIATE")  # an import's transaction, holding the write lock
        started = time.monotonic()
        assert full(argv) == printed
        assert time.monotonic() - started < 5  # not the catalog's 10 s busy timeout
        conn.execute("ROLLBACK")
    assert fast(argv)[0] is None


def test_the_newest_answers_are_kept(sqlite_catalog: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelindex.catalog import lookup_answers

    monkeypatch.setattr(lookup_answers, "KEPT_ROWS", 2)
    shows = [["show", slug, "--database", sqlite_catalog] for slug in ("rope", "rms-norm", "layer-norm")]
    for argv in shows:
        full(argv)
    assert [fast(argv)[0] for argv in shows] == [None, 0, 0]


def test_its_words_are_the_commands_words() -> None:
    """The kinds, options and environment the fast path reads are the command's own (declared where they live)."""
    from kernelindex.catalog.db import ENV_URL
    from kernelindex.cli.query_cmds import KINDS, PAGE_DOORS
    from kernelindex.views.table import VIEW

    assert fast_lookup.SHOW_KINDS == KINDS and fast_lookup.DATABASE_ENV == ENV_URL
    assert set(fast_lookup.SHOW_OPTIONS) == {p.name for p in VIEW["operation"].query} - {"page"}
    assert set(fast_lookup.SHOW_OPTIONS) <= PAGE_DOORS["show"].option_names()
