"""``/runs/{id}/samples.json``: the raw timing samples of a verified run, as its signed bundle carries them."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from kernelindex.web.pages import RUN_ID, catalog_of, page_errors, reject_unknown_params
from kernelindex.web.render import not_found

router = APIRouter(include_in_schema=False)


@router.get("/runs/{run_id}/samples.json")
def samples_route(request: Request, run_id: str) -> JSONResponse:
    reject_unknown_params(request, set())
    if not RUN_ID.fullmatch(run_id):
        raise not_found(f"{run_id[:40]!r} is not a run id: run ids are hex digits (16 on every page).")
    from kernelindex.readmodel.runs import run_samples

    with page_errors():
        data = run_samples(catalog_of(request), run_id)
    return JSONResponse(data, headers={"Content-Disposition": f'inline; filename="{run_id}-samples.json"'})
