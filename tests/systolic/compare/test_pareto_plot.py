"""The Pareto chart (`systolic.compare.pareto_plot`), checked on the matplotlib objects, and
`systolic compare --pareto-plot`."""

from pathlib import Path

import pytest

from systolic.commands.cli import main
from systolic.compare.grid import config_grid
from systolic.compare.pareto import mark_pareto
from systolic.compare.sweep import PreparedModel, sweep
from systolic.compare.workload import WorkloadModel, combine
from systolic.config import ArrayConfig

pytest.importorskip("matplotlib")


def test_front_solid_dominated_faded(lenet: PreparedModel) -> None:
    from matplotlib import pyplot

    from systolic.compare.pareto_plot import pareto_figure

    configs = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws", "os"],
                          spad_kib=[256, 512])  # fmt: skip
    workload = mark_pareto(combine([WorkloadModel("m")], [sweep(lenet, configs)], 1000))
    figure = pareto_figure(workload)
    try:
        pes, sram, energy = figure.axes
        front = sorted((e for e in workload if e.pareto), key=lambda e: (e.config.pes, e.time_ms))
        line = pes.get_lines()[0]
        assert list(line.get_xdata()) == [e.config.pes for e in front]
        assert list(line.get_ydata()) == [e.time_ms for e in front]
        faded = pes.collections[0].get_offsets()
        assert len(faded) == sum(not e.pareto for e in workload) > 0
        assert {t.get_text() for t in pes.texts} == {e.label for e in front}
        assert sram.get_xlabel() == "on-chip SRAM (KiB)"
        assert energy.get_xlabel() == "energy per inference (uJ)"
        assert sorted(energy.get_lines()[0].get_xdata()) == sorted(
            e.energy_pj * 1e-6 for e in front if e.energy_pj is not None)
    finally:
        pyplot.close(figure)


def test_compare_writes_the_chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "front.png"
    assert main(["compare", "--quiet", "--array", "4x4,8x8", "--jobs", "1",
                 "--pareto-plot", str(out)]) == 0  # fmt: skip
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert main(["compare", "--pareto-plot", str(tmp_path / "front.txt")]) == 2
