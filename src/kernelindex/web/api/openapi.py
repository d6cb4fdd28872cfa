"""The OpenAPI document of API v1, as served at ``/api/v1/openapi.json``.

``python -m kernelindex.web.api.openapi > openapi/openapi.json`` regenerates the committed copy;
a test fails when the two drift apart.
"""

from __future__ import annotations

import json
import sys
from typing import Any


class _NoCatalog:
    """The schema does not depend on data: build the app without opening a catalog."""


def document() -> dict[str, Any]:
    from kernelindex.web.app import create_app

    return create_app(_NoCatalog()).openapi()


def render() -> str:
    return json.dumps(document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
