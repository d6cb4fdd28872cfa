"""REST API v1 under ``/api/v1`` (the app includes ``router``): the write path first, then the read
routes, whose catch-all answers 404/405 for anything else under /api/v1."""

from fastapi import APIRouter

from kernelindex.web.api.routes import router as read_router
from kernelindex.web.api.write_routes import router as write_router

router = APIRouter()
router.include_router(write_router)
router.include_router(read_router)

__all__ = ["router"]
