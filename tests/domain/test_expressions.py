"""A shape dimension that is one axis is read straight from the axes: the value the parser gives."""

from __future__ import annotations

import pytest

from kernelindex.domain.expressions import evaluate


@pytest.mark.parametrize(("expression", "value"), [("m", 3), ("k // 128", 2), ("min(m, k)", 3), ("True", True),
                                                   ("ｍ", 3)])
def test_a_dimension_that_is_one_axis_reads_it_as_the_parser_would(expression: str, value: int) -> None:
    # "ｍ" (fullwidth) parses to the name m; "True" to the constant, not an axis of that name.
    assert evaluate(expression, {"m": 3, "k": 256, "True": 5, "ｍ": 7}) == value
