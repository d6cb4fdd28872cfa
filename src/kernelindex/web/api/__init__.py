"""REST API v1 under ``/api/v1`` (the app includes ``router``)."""

from kernelindex.web.api.routes import router

__all__ = ["router"]
