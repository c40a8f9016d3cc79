"""`--plot`: a PNG of cycles and utilization; a clear error without matplotlib."""

import sys

import pytest

from systolic.compare.grid import config_grid
from systolic.compare.plot import check_plot_available, plot_bytes
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
