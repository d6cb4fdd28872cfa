"""Fuzz the whole OpenAPI document in process: no 5xx, every response matches its schema.

The schema is loaded at import time through a small ASGI proxy; a fixture then points the proxy
at the app over the real bundled catalog, so every generated case hits real data.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from kernelindex.web.api.openapi import _NoCatalog


class _Proxy:
    def __init__(self) -> None:
        from kernelindex.web.app import create_app

        self.target: Any = create_app(_NoCatalog())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.target(scope, receive, send)


PROXY = _Proxy()
schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", PROXY)


@pytest.fixture(autouse=True)
def _real_app(api_app: Any) -> None:
    PROXY.target = api_app


@pytest.mark.filterwarnings("ignore")
@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms(case: schemathesis.Case) -> None:
    # A schema-valid but foreign cursor, workload or cohort key is a 400 by design (never a silent restart).
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
