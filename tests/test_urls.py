"""One URL builder (issue 21): every site path in the code is written in ``kernelindex/urls.py``.
Elsewhere no string starts with a site path (``"/operations/``, ``f"/runs/{…}"``, ``"/api/v1``, …);
route declarations (``@router.get(urls.OPERATIONS)``) name the builder's patterns too. The Jinja
templates build their links with the same builder (``urls`` in every template): no attribute value
(``href="/records"``) and no template string (``'/operations/' ~ slug``) starts with a site path. Prose
that names a path (``<code>/api/v1/search</code>`` in the docs page) is not a link and is not read.
Static asset paths (``/static/…``) are not site pages: the asset helper (web/render.py) and the mount
write those."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kernelindex import urls

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "kernelindex"


def _builder_names() -> set[str]:
    """The first segment of every path the URL builder declares (``WORKLOADS = "/workloads"`` adds
    ``workloads``), so a path added there is caught when it is written out anywhere else."""
    tree = ast.parse((PACKAGE / "urls.py").read_text(encoding="utf-8"))
    return {node.value.value.split("/")[1] for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str) and re.match(r"^/[\w.]", node.value.value)}


def mounted_paths() -> set[str]:
    """Every path the app actually mounts (routes of included routers, mounts and plain routes alike)."""
    from starlette.routing import BaseRoute

    from kernelindex.web.api.openapi import _NoCatalog
    from kernelindex.web.app import create_app

    def walk(routes: list[BaseRoute]) -> set[str]:
        found: set[str] = set()
        for route in routes:
            if (included := getattr(route, "original_router", None)) is not None:
                found |= walk(included.routes)
            elif isinstance(path := getattr(route, "path", None), str):
                found.add(path)
        return found

    return walk(create_app(_NoCatalog()).router.routes)


def declared_paths() -> set[str]:
    """The paths and patterns the URL builder declares, each also under the API's prefix."""
    values = [v for v in vars(urls).values() if isinstance(v, str | tuple)]
    declared = {p for v in values for p in (v if isinstance(v, tuple) else (v,))
                if isinstance(p, str) and p.startswith("/")}
    return declared | {urls.api(p) for p in declared}


MOUNTED = mounted_paths()
# the first segment of every mounted path and of every path the builder declares; static assets are not pages
SITE_NAMES = "|".join(sorted(map(re.escape, (_builder_names() | {p.split("/")[1] for p in MOUNTED if p != "/"})
                                 - {urls.STATIC.strip("/")})))
SITE_PATH = re.compile(rf"^/({SITE_NAMES})(?=$|[/?#])")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def site_paths_written(source: str) -> list[str]:
    """The string constants (f-string parts included) of ``source`` that start with a site path."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skipped and SITE_PATH.match(node.value)]


TEMPLATES = PACKAGE / "web" / "templates"
# an attribute's value or a quoted template string that starts with a site path, or is the home page "/"
TEMPLATE_PATH = re.compile(rf"""(?:=\s*"|')(/(?:{SITE_NAMES})?)(?=["'/?#])""")


def site_paths_in_template(text: str) -> list[str]:
    return [found.group(1) for found in TEMPLATE_PATH.finditer(text)]


def test_no_template_writes_a_site_path() -> None:
    found = {str(path.relative_to(TEMPLATES)): written for path in sorted(TEMPLATES.rglob("*.html"))
             if (written := site_paths_in_template(path.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_template_check_sees_links_forms_and_template_strings() -> None:
    assert site_paths_in_template('<a href="/runs/{{ r.run_id }}">') == ["/runs"]
    assert site_paths_in_template('<form action="/search">') == ["/search"]
    assert site_paths_in_template('<a href="/">Home</a>') == ["/"]
    assert site_paths_in_template("{{ query_url('/operations/' ~ slug, workload=w) }}") == ["/operations"]
    assert site_paths_in_template('<a href="/docs#floor">') == ["/docs"]
    assert site_paths_in_template('<code>/api/v1/search</code> <img src="/static/x.svg">') == []
    assert site_paths_in_template('<a href="{{ urls.run(r.run_id) }}">') == []


def test_no_site_path_is_written_outside_the_url_builder() -> None:
    found = {str(path.relative_to(PACKAGE)): written for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "urls.py" and (written := site_paths_written(path.read_text(encoding="utf-8")))}
    assert found == {}


def test_the_check_sees_links_routes_and_f_strings() -> None:
    assert site_paths_written('url = f"/operations/{slug}?workload={key}"') == ["/operations/"]
    assert site_paths_written('@router.get("/records")\ndef f(): pass') == ["/records"]
    assert site_paths_written('x = "/api/v1" + path') == ["/api/v1"]
    assert site_paths_written('@router.get("/workloads")\ndef f(): pass') == ["/workloads"]
    assert site_paths_written('router.post("/resolve/batch", summary="x")') == ["/resolve/batch"]
    assert site_paths_written('"""/challenges: the page."""\nx = "/static/site.css"\ny = "/opera"') == []


def test_every_mounted_route_is_a_path_the_url_builder_declares() -> None:
    """The app mounts no path the builder does not declare, so every link to it can be built there."""
    assert sorted(MOUNTED - declared_paths()) == []
    assert {urls.OPERATION, urls.api(urls.OPERATION), urls.api(urls.CLAIMS), urls.MCP} <= MOUNTED


def test_links_are_built_as_the_pages_read_them() -> None:
    assert urls.cohort("rope", "0a1b2c", "a1b2c3") == "/operations/rope?workload=0a1b2c&cohort=a1b2c3"
    assert urls.operation("rope", ("workload", None), ("gpu", "H100 SXM")) == "/operations/rope?gpu=H100+SXM"
    assert urls.search("rope seq=2048") == "/search?q=rope+seq%3D2048"
    assert urls.challenges("requests", ("asked", 7)) == "/challenges?asked=7#requests"
    assert urls.api(urls.compare(["ab12", "cd34"])) == "/api/v1/compare?run=ab12&run=cd34"
