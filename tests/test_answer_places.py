"""An answer lives in two places (issue 48 item 2, docs/caching.md): the read model (each operation's loaded
data and summary per version of the operation, and the tables derived from them) and the finished answer
(web/answer_cache.py). Every call that keeps something in the read model's cache is found in the source
and placed by the layer of its module; a view keeps nothing of its own, and no other web module keeps an
answer. The finished site-wide answers the workers share (catalog/shared_answers.py) are the second place's,
read and written by the answer cache alone."""

from __future__ import annotations

import ast
from pathlib import Path

import kernelindex

PACKAGE = Path(kernelindex.__file__).parent
MODEL_LAYERS = ("readmodel", "resolve", "services")  # the read model and the questions it answers
RENDERED = "web/answer_cache.py"


def _keeping_calls(tree: ast.AST) -> list[int]:
    """Lines of the calls that keep a value: ``READ_CACHE.get``/``put`` and ``kept(...)``."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and _keeps(node.func)]


def _keeps(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "kept"
    return isinstance(func, ast.Attribute) and func.attr in ("get", "put") and isinstance(func.value, ast.Name) \
        and func.value.id == "READ_CACHE"


def _places() -> dict[str, list[str]]:
    places: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for line in _keeping_calls(ast.parse(path.read_text(), module)):
            place = "the read model" if module.split("/")[0] in MODEL_LAYERS else \
                "the rendered answer" if module == RENDERED else f"elsewhere: {module}"
            places.setdefault(place, []).append(f"{module}:{line}")
    return places


def test_an_answer_is_kept_in_at_most_two_places() -> None:
    places = _places()
    assert set(places) <= {"the read model", "the rendered answer"}, places
    assert len(places) <= 2
    assert places["the rendered answer"] and places["the read model"]  # the scan finds what there is


def test_a_view_keeps_nothing_of_its_own() -> None:
    views = PACKAGE / "views"
    assert all(not _keeping_calls(ast.parse(path.read_text())) and "READ_CACHE" not in path.read_text()
               for path in views.rglob("*.py"))


def test_the_shared_answers_are_the_rendered_answers_alone() -> None:
    """The store of site-wide answers computed once for every worker is used by the answer cache only (with its
    kept answer, ``web/kept_answers.py``, and its sharing steps, ``web/shared_site_answers.py``): it holds finished
    answers, not a model of its own."""
    users = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                   if "shared_answers" in path.read_text() and path.name != "shared_answers.py"
                   and "migrations" not in path.parts and path.name != "models.py")
    assert users == ["web/answer_cache.py", "web/kept_answers.py", "web/shared_site_answers.py"], users


def test_the_kept_lookups_are_the_clis_finished_answers_alone() -> None:
    """The ``ki`` lookups' finished answers (``catalog/lookup_answers.py``) are kept by the full path's command
    and read by the fast path alone: not a model of their own for any other door."""
    users = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                   if ("lookup_answers" in path.read_text() or "LookupAnswerRow" in path.read_text())
                   and "migrations" not in path.parts and path.name not in ("models.py", "lookup_answers.py"))
    assert users == ["catalog/lookup_form.py", "cli/fast_lookup.py", "cli/lookups.py"], users
