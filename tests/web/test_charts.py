"""Scaling chart SVG: deterministic, log axes when wide, floor line, linked points with exact tooltips."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from kernelindex.web.charts import ChartError, format_axis_value, make_scale, render_scaling_svg

SVG = "{http://www.w3.org/2000/svg}"

ROPE = {
    "axis": "seq",
    "series": [
        {"implementation": "Liger", "points": [
            {"x": 1024, "median_ns": 34400, "run_id": "a1"}, {"x": 2048, "median_ns": 58880, "run_id": "a2"},
            {"x": 4096, "median_ns": 109000, "run_id": "a3"}, {"x": 8192, "median_ns": 209300, "run_id": "a4"},
            {"x": 16384, "median_ns": 410500, "run_id": "a5"}]},
        {"implementation": "Transformers", "points": [
            {"x": 1024, "median_ns": 280800, "run_id": "b1"}, {"x": 2048, "median_ns": 516100, "run_id": "b2"},
            {"x": 4096, "median_ns": 994800, "run_id": "b3"}, {"x": 8192, "median_ns": 1933000, "run_id": "b4"},
            {"x": 16384, "median_ns": 3817000, "run_id": "b5"}]},
    ],
    "floor": [{"x": 1024, "floor_ns": 21100}, {"x": 16384, "floor_ns": 337000}],
}


def test_same_input_gives_identical_bytes() -> None:
    assert render_scaling_svg(ROPE) == render_scaling_svg(dict(ROPE))


def test_svg_is_well_formed_and_accessible() -> None:
    root = ET.fromstring(render_scaling_svg(ROPE))
    assert root.find(f"{SVG}title").text == "Scaling by seq"
    assert root.find(f"{SVG}desc") is not None
    links = root.findall(f".//{SVG}a")
    assert [a.get("href") for a in links][:2] == ["/runs/a1", "/runs/a2"]
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert "Liger · seq = 2048 · 58.9 µs (58,880 ns median)" in titles
    assert "Transformers · seq = 8k · 1.93 ms (1,933,000 ns median)" in titles


def test_floor_line_is_drawn_and_labelled_as_an_estimate() -> None:
    svg = render_scaling_svg(ROPE)
    assert 'class="floor"' in svg and "physical floor (floor-v1 estimate, not evidence)" in svg


def test_wide_ranges_get_log_axes() -> None:
    assert make_scale([1024, 16384], 0, 100).log
    assert not make_scale([100, 200], 0, 100).log
    assert "(log)" in render_scaling_svg(ROPE)


def test_at_most_five_series() -> None:
    many = {"axis": "seq", "series": [
        {"implementation": f"impl{i}", "points": [{"x": 1, "median_ns": 10 + i, "run_id": f"r{i}"}]} for i in range(7)
    ]}
    assert render_scaling_svg(many).count('class="series"') == 5


def test_no_points_is_an_error() -> None:
    with pytest.raises(ChartError):
        render_scaling_svg({"axis": "seq", "series": []})


def test_axis_labels() -> None:
    assert [format_axis_value(x) for x in (1024, 4096, 8192, 131072)] == ["1024", "4096", "8k", "128k"]
