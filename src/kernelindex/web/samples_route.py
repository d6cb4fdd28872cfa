"""``/runs/{id}/samples.json``: the raw timing samples of a verified run, as its signed bundle carries them."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from kernelindex import urls
from kernelindex.services import reads
from kernelindex.services.problems import Problem
from kernelindex.views.params import read_query
from kernelindex.web.answer_scope import keeps_answers
from kernelindex.web.pages import catalog_of, page_errors, problem_page, query_of

router = APIRouter(include_in_schema=False)


@keeps_answers(scope="operation")
@router.get(urls.RUN_SAMPLES)
def samples_route(request: Request, run_id: str) -> JSONResponse:
    with page_errors(request):  # a data download, strict like the API: it takes no parameters
        read_query((), (), query_of(request))
    data = reads.samples(catalog_of(request), run_id)
    if isinstance(data, Problem):
        problem_page(request, data)
    return JSONResponse(data, headers={"Content-Disposition": f'inline; filename="{run_id}-samples.json"'})
