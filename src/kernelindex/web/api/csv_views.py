"""CSV downloads of the pages with rows (``?format=csv`` on their JSON twins; the rows are the view's
``csv`` declaration, ``views/tables.py``).

Each CSV is a rendering of the route's JSON body (the read model's answer): a header row, then one
row per row of the page; units are in the header names (``time_ns`` with ``statistic``, ``median_ns`` its
deprecated alias, ``vs_first_ratio``, ``observed_at_utc``).
Attribution travels on every row (``source``, ``source_license``, ``source_attribution``) and in the
``KernelIndex-Attribution`` response header, so a file cut out of its page still says whose data it is.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from fastapi.responses import Response

from kernelindex.readmodel.pages_home import sources_by_name

CSV_CONTENT = {"text/csv": {"schema": {"type": "string",
                                       "description": "A header row, then one row per row of the page."}}}
SOURCE_COLUMNS = ["source", "source_license", "source_attribution"]


def _notices(catalog: Any) -> dict[str, tuple[str, str]]:
    return {name: (s.license or "", s.attribution or "") for name, s in sources_by_name(catalog).items()}


def csv_response(catalog: Any, columns: list[str], rows: Iterable[dict[str, Any]], filename: str) -> Response:
    notices = _notices(catalog)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns + SOURCE_COLUMNS, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    used: dict[str, str] = {}
    for row in rows:
        license_, attribution = notices.get(row.get("source", ""), ("", ""))
        writer.writerow({**row, "source_license": license_, "source_attribution": attribution})
        if attribution:
            used[row["source"]] = attribution
    header = " | ".join(f"{name}: {text}" for name, text in sorted(used.items()))
    return Response(buffer.getvalue(), media_type="text/csv; charset=utf-8", headers={
        "content-disposition": f'attachment; filename="{filename}"',
        "kernelindex-attribution": _ascii(header) or "KernelIndex"})


def _ascii(text: str) -> str:
    """HTTP header values are Latin-1 at best: spell the copyright sign, replace anything else."""
    return text.replace("©", "(c)").encode("ascii", "replace").decode("ascii")
