"""`--plot`: a PNG of cycles and utilization; a clear error without matplotlib."""

import sys

import pytest

from systolic.compare.grid import config_grid
from systolic.compare.plot import (
    FIGURE_WIDTH,
    MAX_HEIGHT,
    check_plot_available,
    figure,
    plot_bytes,
    plot_label,
)
from systolic.compare.sweep import PreparedModel, sweep
from systolic.config import ArrayConfig
from systolic.errors import ConfigError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_plot_is_a_png(lenet: PreparedModel) -> None:
    pytest.importorskip("matplotlib")
    results = sweep(lenet, config_grid(ArrayConfig(), arrays=["4x4"], dataflows=["ws", "os"]))
    data = plot_bytes(results, "lenet")
    assert data.startswith(PNG_SIGNATURE)
    assert plot_bytes(results, "lenet", "svg").lstrip().startswith(b"<?xml")


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(ConfigError, match=r"pip install 'systolic\[plot\]'"):
        check_plot_available()


def _texts(axis) -> list[str]:  # type: ignore[no-untyped-def]
    return [text.get_text() for text in axis.texts]


@pytest.mark.parametrize(("arrays", "dataflows", "buses"), [
    (["8x8"], ["ws"], [16]),
    (["8x8"], ["ws", "os"], [16]),  # only the dataflow varies: the array size stays
    (["4x4", "8x8", "16x16"], ["ws", "os"], [8, 16]),  # 12 configurations
])  # fmt: skip
def test_figure_labels_values_and_size(lenet: PreparedModel, arrays, dataflows, buses) -> None:  # type: ignore[no-untyped-def]
    pyplot = pytest.importorskip("matplotlib.pyplot")
    grid = config_grid(ArrayConfig(), arrays=arrays, dataflows=dataflows, bus_bytes=buses)
    results = sweep(lenet, grid)
    drawn = figure(results, "lenet")
    try:
        cycles_axis, util_axis, layer_axis = drawn.axes
        width, height = drawn.get_size_inches()
        assert width == FIGURE_WIDTH and 5 <= height <= MAX_HEIGHT
        labels = [tick.get_text() for tick in cycles_axis.get_yticklabels()]
        assert labels == [plot_label(result) for result in results]
        for label, result in zip(labels, results, strict=True):
            config = result.config
            assert label.startswith(f"{config.rows}x{config.cols} {config.dataflow.value}")
            if len(buses) > 1:
                assert label.endswith(f"bus {config.bus_bytes}")
        assert _texts(cycles_axis) == [f"{result.total_cycles:,}" for result in results]
        assert _texts(util_axis) == [f"{100 * result.utilization:.1f}%" for result in results]
        assert len(layer_axis.get_lines()) == len(results)
        layer_names = [tick.get_text() for tick in layer_axis.get_xticklabels()]
        assert layer_names == [layer.name for layer in results[0].layers
                               if layer.unit != "host" and layer.cycles]  # fmt: skip
        assert "Flatten" not in layer_names  # an addressing layer: no cycles
        assert [t.get_text() for t in layer_axis.get_legend().get_texts()] == labels
    finally:
        pyplot.close(drawn)


def test_figures_grow_in_height_only(lenet: PreparedModel) -> None:
    pyplot = pytest.importorskip("matplotlib.pyplot")
    one = sweep(lenet, config_grid(ArrayConfig(), arrays=["8x8"], dataflows=["ws"]))
    small, large = figure(one, "a"), figure(one * 200, "b")
    try:
        assert small.get_size_inches()[0] == large.get_size_inches()[0] == FIGURE_WIDTH
        assert small.get_size_inches()[1] < large.get_size_inches()[1] == MAX_HEIGHT
    finally:
        pyplot.close(small)
        pyplot.close(large)
