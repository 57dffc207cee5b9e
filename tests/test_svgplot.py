"""benchmarks/svgplot.py: the dependency-free SVG line plot used in docs/BENCHMARKS.md."""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from svgplot import line_plot

NS = {"svg": "http://www.w3.org/2000/svg"}
SERIES = {
    "ours": [(1000, 0.05), (10_000, 0.2), (100_000, 1.6)],
    "theirs": [(100_000, 40.0), (1000, 0.4), (10_000, 4.0)],  # out of order on purpose
}


def plot(series=SERIES, **kwargs) -> ET.Element:
    args = {"title": "latency <ms> & size", "x_label": "items", "y_label": "ms"} | kwargs
    return ET.fromstring(line_plot(series, **args))


def polyline_points(root: ET.Element) -> list[list[tuple[float, float]]]:
    return [
        [tuple(map(float, p.split(","))) for p in line.get("points").split()]
        for line in root.iterfind(".//svg:polyline", NS)
    ]


def texts(root: ET.Element) -> list[str]:
    return [t.text for t in root.iterfind(".//svg:text", NS)]


def test_standalone_svg_with_one_polyline_per_series_and_a_legend():
    root = plot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("width") and root.get("height") and root.get("viewBox")
    lines = polyline_points(root)
    assert len(lines) == 2
    assert [len(pts) for pts in lines] == [3, 3]
    colours = {line.get("stroke") for line in root.iterfind(".//svg:polyline", NS)}
    assert len(colours) == 2
    assert {"ours", "theirs", "latency <ms> & size", "items", "ms"} <= set(texts(root))


def test_points_map_monotonically_and_in_x_order():
    for log_y in (False, True):
        for pts in polyline_points(plot(log_y=log_y)):
            px = [x for x, _ in pts]
            py = [y for _, y in pts]
            assert px == sorted(px) and len(set(px)) == 3
            assert py == sorted(py, reverse=True)  # larger values sit higher (smaller y)
    ours, theirs = polyline_points(plot(log_y=True))
    assert all(a[1] > b[1] for a, b in zip(ours, theirs, strict=True))  # ours is lower
    # On a log x axis equal ratios are equal distances.
    assert ours[1][0] - ours[0][0] == pytest.approx(ours[2][0] - ours[1][0], abs=0.2)


def test_log_axes_label_decades():
    labels = set(texts(plot(log_y=True)))
    assert {"1k", "10k", "100k"} <= labels
    assert {"0.01", "0.1", "1", "10", "100"} <= labels
    # A range inside one decade still gets two decade ticks around it.
    labels = set(texts(plot({"a": [(2000, 1), (8000, 2)]})))
    assert {"1k", "10k"} <= labels


def test_linear_axes():
    root = plot({"a": [(0, -1.0), (5, 3.0)], "b": [(2, 2.0)]}, log_x=False)
    labels = set(texts(root))
    assert {"0", "5"} <= labels
    assert len(polyline_points(root)) == 2


@pytest.mark.parametrize(
    ("series", "kwargs"),
    [
        ({"a": [(0, 1.0), (10, 2.0)]}, {}),  # zero on the log x axis
        ({"a": [(1, 1.0), (10, -2.0)]}, {"log_y": True}),  # negative on the log y axis
        ({"a": [(1, float("nan"))]}, {"log_x": False}),
        ({"a": []}, {}),
        ({}, {}),
    ],
)
def test_bad_input_raises(series, kwargs):
    with pytest.raises(ValueError):
        line_plot(series, title="t", x_label="x", y_label="y", **kwargs)
