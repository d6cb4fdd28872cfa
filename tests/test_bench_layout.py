"""``bench/`` holds benchmarks of KernelIndex itself that print figures (issue 48), and nothing the GPU campaigns need:
their drivers, checks and tables are the campaign engine's (``src/kernelindex/campaigns``, ``ki runner campaign``),
source-data derivations are ``scripts/``, test support lives under ``tests/``. These tests state the rule on the files
themselves, so a campaign script or a one-off data fix added to ``bench/`` fails here with what to do."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
# Data files a benchmark reads, with the benchmarks that read them.
BENCH_DATA = {"queries.txt": ("batch_resolve.py", "read_scale.py")}
# Helpers a benchmark runs (they print no figures of their own), with the benchmark that runs each.
BENCH_HELPERS = {"new_bundles.py": "load.py"}
# What only a GPU machine or a campaign needs: a benchmark runs on the CPU machine with the dev install.
GPU_ONLY = ("kernelindex.campaigns", "torch", "triton", "flashinfer", "cuda", "cupy", "pynvml")
# Where a `bench/NAME.py` reference must name a file that exists (the ledgers and bundles keep their history as is).
REFERRING = ("README.md", "docs", "src/kernelindex", "tests", "scripts", ".ci", "pyproject.toml")
HISTORY = ("src/kernelindex/data/ledgers", "src/kernelindex/data/verified")
# A bench/ name that stays in shipped data: the floor note signed into every KernelBench OperationSpec (and the
# problems.json it made) names the script that is now scripts/derive-kernelbench-floors.
FORMER_NAMES = {"kernelbench_floors.py": "scripts/derive-kernelbench-floors"}
# Tests that load a benchmark to check the benchmark's own logic (not to borrow it): the held-out search score.
BENCHMARK_TESTS = {"tests/resolve/test_heldout_file.py": "search.py"}
BENCH_PATH = re.compile(r"(?<![\w-])bench/([\w-]+\.(?:py|txt))")


def _scripts() -> list[Path]:
    return sorted(BENCH.glob("*.py"))


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def test_bench_holds_only_benchmark_scripts_and_the_data_they_read() -> None:
    stray = [p.name for p in BENCH.iterdir() if p.name != "__pycache__"
             and not (p.is_file() and (p.suffix == ".py" or p.name in BENCH_DATA))]
    assert not stray, (f"bench/ holds {stray}: a campaign's raw output, driver or shell script belongs to the engine "
                       "(src/kernelindex/campaigns) or to git history; a benchmark's data file goes in BENCH_DATA")
    for name, readers in BENCH_DATA.items():
        assert (BENCH / name).is_file(), f"BENCH_DATA names bench/{name}, which is gone"
        unread = [r for r in readers if name not in (BENCH / r).read_text(encoding="utf-8")]
        assert not unread, f"bench/{name} is kept for {unread}, which no longer read it"


def test_each_benchmark_says_what_it_prints_and_how_to_run_it() -> None:
    for path in _scripts():
        doc = _docstring(path)
        if path.name in BENCH_HELPERS:
            runner = BENCH_HELPERS[path.name]
            assert f"bench/{runner}" in doc, f"bench/{path.name} must name the benchmark it serves (bench/{runner})"
            assert path.name in (BENCH / runner).read_text(encoding="utf-8"), (
                f"bench/{runner} no longer runs bench/{path.name}: delete the helper or name its new user")
            continue
        assert doc, f"bench/{path.name} has no module docstring: say what it prints and how to run it"
        assert re.search(r"\bprint(s|ed)?\b", doc, re.IGNORECASE), (
            f"bench/{path.name}'s docstring does not say what it prints: a bench/ script prints figures; a check, "
            "table or fix the GPU campaigns need goes to src/kernelindex/campaigns behind `ki runner campaign`")
        assert f"bench/{path.name}" in doc, f"bench/{path.name}'s docstring has no command line that runs it"


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def test_no_benchmark_needs_the_campaign_engine_a_gpu_or_a_file_that_left_bench() -> None:
    """Imports, at any depth of the script: none of the GPU-only ones, and each one found — a sibling in bench/ (as
    ``python bench/X.py`` finds it) or an installed module; a script left importing a moved driver fails here."""
    siblings = {p.stem for p in _scripts()}
    for path in _scripts():
        for module in _imports(path):
            top = module.split(".")[0]
            assert not any(module == m or module.startswith(f"{m}.") for m in GPU_ONLY), (
                f"bench/{path.name} imports {module}: what needs the campaign engine or a GPU is campaign tooling "
                "(src/kernelindex/campaigns, `ki runner campaign`)")
            assert top in siblings or importlib.util.find_spec(top) is not None, (
                f"bench/{path.name} imports {module}, which is neither in bench/ nor installed by the dev install")


def _code_strings(path: Path) -> Iterator[tuple[int, str]]:
    """The string constants of a module that are not docstrings (what the code uses, not what it says)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_neither_the_package_nor_the_tests_run_a_bench_file() -> None:
    """A file the package or a test needs is not a benchmark: the engine's step, a test's helper, lives with them."""
    found = []
    for top in (ROOT / "src" / "kernelindex", ROOT / "tests"):
        for path in top.rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if path == Path(__file__) or relative in BENCHMARK_TESTS:
                continue
            for line, text in _code_strings(path):
                named = set(BENCH_PATH.findall(text))
                if text == "bench" or (re.search(r"(?<![\w-])bench/", text) and not named <= set(FORMER_NAMES)):
                    found.append(f"{relative}:{line}: {text[:80]!r}")
    assert not found, "code that reaches into bench/ (move what it needs next to it):\n" + "\n".join(found)


def _referring_files() -> Iterator[Path]:
    for name in REFERRING:
        top = ROOT / name
        files = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
        for path in files:
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(HISTORY) and "__pycache__" not in relative and path.suffix != ".pyc":
                yield path


def test_the_benchmark_tests_load_a_benchmark_that_is_there() -> None:
    for test, script in BENCHMARK_TESTS.items():
        assert (BENCH / script).is_file(), f"{test} is allowed to load bench/{script}, which is gone"
        assert '"bench"' in (ROOT / test).read_text(encoding="utf-8"), f"{test} no longer loads a benchmark: drop it"


def test_every_bench_file_the_docs_and_code_name_exists() -> None:
    missing = []
    for path in _referring_files():
        if path == Path(__file__):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for name in sorted(set(BENCH_PATH.findall(text))):
            if not (BENCH / name).is_file() and name not in FORMER_NAMES:
                missing.append(f"{path.relative_to(ROOT)} names bench/{name}")
    assert not missing, "references to bench/ files that are gone (name the command that replaced them):\n" + \
        "\n".join(missing)
