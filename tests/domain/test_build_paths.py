"""build() writes data of JSON's own types with orjson and anything else with json.dumps: both paths
accept, convert and refuse exactly what json.dumps + JSON-mode validation always did."""

from __future__ import annotations

import math

import pytest

from kernelindex.domain.canonical import check_json_value
from kernelindex.domain.manifests import ManifestError, build, digest_of, manifest_json

PROJECT = {"name": "x", "kind": "library", "packages": ["b", "a"]}


class Text(str):
    pass


@pytest.mark.parametrize(("value", "plain"), [
    ({"a": [1, 2.5, "x", True, None, {"b": -3}]}, True),
    ({"a": (1, 2)}, False),  # a tuple: json.dumps writes it as a list
    ({1: "a"}, False),  # json.dumps writes the key as "1"
    ({"a": math.nan}, False),  # json.dumps refuses it
    ({"a": math.inf}, False),
    ({"a": Text("x")}, False),
    ({"a": [{"b": [1]}]}, True),
])
def test_the_walk_says_which_values_hold_only_json_types(value: object, plain: bool) -> None:
    assert check_json_value(value) is plain


def test_a_tuple_and_a_list_build_the_same_manifest() -> None:
    as_list = build("SoftwareProject", PROJECT)
    as_tuple = build("SoftwareProject", {**PROJECT, "packages": ("b", "a")})
    assert digest_of(as_list) == digest_of(as_tuple)
    assert manifest_json(as_list) == manifest_json(as_tuple)


def test_keys_that_are_not_text_are_written_as_json_writes_them() -> None:
    assert build("SoftwareProject", PROJECT, {"labels": {1: "a"}}).metadata.labels == {"1": "a"}


def test_a_float_json_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        build("OperationSpec", {"family": "f", "semantics": "s", "axes": {}, "inputs": [], "outputs": [],
                                "reference": "r", "tolerance": {"fp32": math.nan}})


def test_text_with_a_lone_surrogate_is_refused_as_invalid_json() -> None:
    with pytest.raises(ManifestError, match="Invalid JSON"):
        build("SoftwareProject", {**PROJECT, "name": "x\ud800"})

