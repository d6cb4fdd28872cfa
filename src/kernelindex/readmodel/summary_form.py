"""The fingerprint of the code and registry a stored operation summary comes from (``readmodel/summaries.py``):
a stored summary, and the attainable rates kept in it (``readmodel/attainable.py``), are read back only by
the code that would compute the same ones; after an upgrade they are computed again."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import select, tuple_

from kernelindex.catalog.code_form import code_fingerprint
from kernelindex.catalog.db import Catalog
from kernelindex.catalog.models import OperationSummaryRow


@cache
def summary_form() -> str:
    """A fingerprint of the code and registry a summary comes from: a stored summary is read back only
    by the code that would compute the same one (after an upgrade they are computed again)."""
    return code_fingerprint(("domain", "policy", "readmodel", "registry"))


def stored_column(catalog: Catalog, wanted: dict[str, int], column: Any = OperationSummaryRow.body) -> dict[str, Any]:
    """``column`` (the body: its bytes) of the stored summaries of these operations at these versions, in
    this code's form (those not stored: absent). Summaries and the attainable ceilings both read through it."""
    found: dict[str, Any] = {}
    keys = sorted(wanted.items())
    with catalog.engine.connect() as conn:
        for start in range(0, len(keys), 500):
            rows = conn.execute(select(OperationSummaryRow.operation, column).where(
                OperationSummaryRow.form == summary_form(),
                tuple_(OperationSummaryRow.operation, OperationSummaryRow.version).in_(keys[start:start + 500])))
            found.update((slug, value.encode() if isinstance(value, str) else value) for slug, value in rows)
    return found
