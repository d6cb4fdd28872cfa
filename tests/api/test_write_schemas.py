"""The measurement request's API schema is derived from the catalog's dataclass (web/api/write_schemas.py):
it must accept exactly what ``MeasurementRequest.to_json`` writes, no field more or less."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from kernelindex.catalog.requests import MeasurementRequest, Replica
from kernelindex.web.api.write_schemas import MeasurementRequestOut

NOW = datetime(2030, 1, 15, 12, 0, tzinfo=UTC)


def _request() -> MeasurementRequest:
    replica = Replica(1, "claimed", "runner-a", "k1", NOW + timedelta(minutes=5), NOW, None, None, None, 1)
    return MeasurementRequest(7, "ab" * 32, "rope", "h100", {"axes": {"seq": 2048}}, {"axes": {"seq": 2048}}, 2,
                              "claimed", NOW - timedelta(days=3), NOW, [replica])


def test_the_schema_accepts_the_answer_the_catalog_writes() -> None:
    shown = _request().to_json(NOW)
    MeasurementRequestOut.model_validate(shown)
    assert list(MeasurementRequestOut.model_fields) == [*(k for k in shown if k not in ("age_seconds", "url")),
                                                        "age_seconds", "url"]


@pytest.mark.parametrize("change", ["drop", "add"])
def test_the_schema_refuses_an_answer_with_a_field_more_or_less(change: str) -> None:
    shown = _request().to_json(NOW)
    if change == "drop":
        del shown["request"]
    else:
        shown["spec"] = {}
    with pytest.raises(ValidationError):
        MeasurementRequestOut.model_validate(shown)
