"""``/api/docs``: the interactive API reference, Swagger UI 5 over our OpenAPI 3.1 document.

FastAPI's own Swagger page loads its assets from a CDN and starts them with an inline script; the
site's CSP allows neither. The assets come instead from a pinned package (fastapi-offline, which ships
Swagger UI 5.32.6) and are served from this origin under ``/static/swagger-ui/``; the page starts them
with our own ``api-docs.js``. The page is a site page first: its links to the methodology's API section
and to the raw schema are in the HTML, so it is never blank, with scripts off or the assets missing.
"""

from __future__ import annotations

from importlib import metadata, util

from fastapi import APIRouter, FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse

from kernelindex import urls
from kernelindex.web.pages import canonical_link
from kernelindex.web.render import render

ASSETS_PACKAGE = "fastapi_offline"  # its ``static/`` folder: swagger-ui-bundle.js, swagger-ui.css
ASSETS_PATH = urls.SWAGGER_ASSETS

router = APIRouter(include_in_schema=False)


def assets_version() -> str | None:
    """The assets' package version (their cache key), or None where the package is not installed."""
    if util.find_spec(ASSETS_PACKAGE) is None:
        return None
    return metadata.version(ASSETS_PACKAGE.replace("_", "-"))


def mount_assets(app: FastAPI) -> None:
    """Serve the package's Swagger UI files from this origin (before the site's ``/static`` mount)."""
    if assets_version() is not None:
        app.mount(ASSETS_PATH, StaticFiles(packages=[(ASSETS_PACKAGE, "static")]), name="swagger-ui")


def api_root() -> JSONResponse:
    """The API's prefix itself: where its reference and schema are (it used to be an HTML 404)."""
    return JSONResponse({"api": urls.API, "docs": urls.API_DOCS, "openapi": urls.OPENAPI,
                         "detail": f"The KernelIndex API lives under {urls.API}/…; its reference is {urls.API_DOCS} "
                                   f"and its OpenAPI document {urls.OPENAPI}."})


def openapi_elsewhere() -> RedirectResponse:
    """Where people look for the schema: to the reference, which links the document (a relative Location)."""
    return RedirectResponse(urls.API_DOCS, status_code=308)


for _path in (urls.API, *urls.API_ROOT_ALIASES):
    router.add_api_route(_path, api_root, methods=["GET"])
for _path in urls.OPENAPI_GUESSES:
    router.add_api_route(_path, openapi_elsewhere, methods=["GET"])


@router.get(urls.API_DOCS, response_class=HTMLResponse)
def api_docs_page(request: Request) -> HTMLResponse:
    version = assets_version()
    assets = None if version is None else {
        "js": f"{ASSETS_PATH}/swagger-ui-bundle.js?v={version}",
        "css": f"{ASSETS_PATH}/swagger-ui.css?v={version}",
    }
    response = render("api_docs.html", nav="docs", openapi_url=request.app.openapi_url, assets=assets)
    response.headers.update(canonical_link(request, {}))
    return response
