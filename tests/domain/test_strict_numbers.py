"""One rule for numbers written as text (issue 8, defect 14): JSON's number grammar, nothing lenient."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kernelindex.domain.numbers import NumberError, json_number, parse_integer, parse_number
from kernelindex.domain.units import DurationError, parse_duration_ns


@pytest.mark.parametrize("text", ["0.0588", "1e-05", "58", "-3", "2.5E+3", "0"])
def test_numbers_as_json_writes_them(text: str) -> None:
    assert parse_number(text, "y") == Decimal(text)


@pytest.mark.parametrize("text", ["1_0", " 1.0", "1.0 ", "+1", "nan", "inf", "1.", ".5", "01", "１０", "", "0x10",
                                  "1e99999"])
def test_lenient_numbers_are_refused_naming_the_field(text: str) -> None:
    with pytest.raises(NumberError, match=r"^y_value_50 is .*, not a number"):
        parse_number(text, "y_value_50")


@pytest.mark.parametrize("text", ["2_048", " 2048", "2048.0", "02048", "+2048", "2e3"])
def test_integers_are_digits_only(text: str) -> None:
    assert parse_integer("2048", "limit") == 2048
    with pytest.raises(NumberError, match="limit is .*, not an integer"):
        parse_integer(text, "limit")


@pytest.mark.parametrize("text", ["1_0ns", " 10ns", "10ns ", "10  ns", "+10ns"])
def test_durations_use_the_same_number_rule(text: str) -> None:
    assert parse_duration_ns("10 ns") == parse_duration_ns("1e1ns") == 10
    with pytest.raises(DurationError):
        parse_duration_ns(text)


@pytest.mark.parametrize("value", ["10", " 1.0", True, None, [1]])
def test_a_json_number_must_be_written_as_one(value: object) -> None:
    assert json_number(2.5, "score value") == 2.5
    with pytest.raises(NumberError, match="score value is .*: write it as a JSON number"):
        json_number(value, "score value")
