"""An analytic area model of the accelerator, fitted to synthesized configurations, so that a
sweep need not synthesize every point.

Per component (`systolic.verilog.synth_components`: pe_array, scratchpad, params,
accumulator, output_stage, vector_unit, store, dma, dispatcher, execute_control, counters,
glue) and per figure (`FIGURES`: word-level cells, flip-flop bits, memory bits; Yosys' generic
coarse synthesis) the model is a linear formula in the configuration's `FEATURES`, with
least-squares coefficients (`fit`), for example pe_array = a + b·rows·cols + c·(rows + cols).
The synthesized points are package data (area_data.json, written by
bench/bench_area_model.py, each marked "fit" or "held_out"); the coefficients fitted on the
"fit" points are area_coefficients.json, so nothing here needs Yosys.

`estimate(config)` predicts every component's figures; `area_mm2(config)` turns them into one
area at the `DENSITY` assumptions (stated there; an order of magnitude for comparing
configurations, not a layout). Its documented error on held-out configurations: bench/area_model.md.
"""

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from systolic.compare.area_without import apply_savings
from systolic.config import ArrayConfig, Dataflow
from systolic.config_units import parse_units

__all__ = [
    "BOTH_FACTORS", "COEFFICIENTS_PATH", "DATA_PATH", "DENSITY", "FEATURES", "FIGURES",
    "HELD_OUT_COMPONENT_ERROR", "HELD_OUT_TOTAL_ERROR", "Point", "area_mm2",
    "estimate", "evaluate", "fit", "load_coefficients", "load_points", "relative_errors",
    "save_coefficients",
]  # fmt: skip

DATA_PATH = Path(__file__).with_name("area_data.json")
COEFFICIENTS_PATH = Path(__file__).with_name("area_coefficients.json")
FIGURES = ("cells", "flip_flops", "memory_bits")
HELD_OUT_TOTAL_ERROR = 0.15
"""The stated bound on the relative error of the total area (at `DENSITY`) on held-out
configurations (tests check it on the stored points; measured figures: bench/area_model.md)."""
HELD_OUT_COMPONENT_ERROR = 0.35
"""The stated bound on any one component's relative area error on held-out configurations."""


def _features(config: ArrayConfig) -> dict[str, float]:
    return {
        "one": 1.0,
        "pes": float(config.pes),
        "skew": float(config.rows * (config.rows - 1) + config.cols * (config.cols - 1)) / 2,
        "cols": float(config.cols),
        "dim": float(config.dim),
        "spad_bits": float(config.spad_kib * 8192),
        "acc_bits": float(config.acc_kib * 8192),
    }


FEATURES: dict[str, tuple[str, ...]] = {
    "pe_array": ("one", "pes", "skew"),
    "scratchpad": ("spad_bits",),
    "params": ("one", "cols"),
    "accumulator": ("one", "cols", "acc_bits"),
    "output_stage": ("one", "cols"),
    "vector_unit": ("one", "dim"),
    "store": ("one", "dim"),
    "dma": ("one", "dim"),
    "dispatcher": ("one", "dim"),
    "execute_control": ("one", "dim"),
    "counters": ("one",),
    "glue": ("one", "dim"),
}
"""Per component, the configuration quantities its figures are linear in (rows·cols PEs; the
skew and deskew registers' triangles, rows(rows-1)/2 + cols(cols-1)/2; cols output lanes;
dim = the array's larger side, the width of a scratchpad row; memory bits). The operand widths
and the dataflow are not features: the points are weight-stationary with 8-bit operands and
32-bit accumulators, and other widths or output-stationary get the same estimate; an array of
both dataflows gets its PE array and EXECUTE control scaled by `BOTH_FACTORS`."""

BOTH_FACTORS: dict[str, dict[str, float]] = {
    "pe_array": {"cells": 1542 / 966, "flip_flops": 9886 / 5519},
    "execute_control": {"cells": 491 / 197, "flip_flops": 1975 / 309, "memory_bits": 960 / 324},
}
"""`Dataflow.BOTH` against the weight-stationary points the model is fitted on, per component
and figure: the ratio of the two synthesized 8x8 accelerators (`systolic verilog --array 8x8
--dataflow both --report` over `--dataflow ws`, bench/README.md "Both dataflows in one array").
The PEs keep both dataflows' registers and add the multiplexers of the shared multiplier and
adder (the multipliers themselves are shared: 64 in both); the EXECUTE unit holds both
sequencers, whose output-stationary A banks (2·rows·dim operands) grow faster than the rest:
at 4x4 the ratios are 1.74 and 1.96 (PE array), 2.27 and 3.83 (EXECUTE control), so the
factors are a first-order estimate away from 8x8."""

DENSITY = {"sram_um2_per_bit": 0.3, "flip_flop_um2": 4.5, "cell_um2": 40.0}
"""The area assumptions of `area_mm2`, roughly a 45 nm process: an SRAM bit cell with its
share of periphery 0.3 µm², a flip-flop bit 4.5 µm², and 40 µm² per other word-level cell (an
adder, a comparator, a multiplexer: about ten gates of a few µm² each). Stated so that a user
can rescale; the relative areas of configurations are what compare uses."""


@dataclasses.dataclass(frozen=True)
class Point:
    """One synthesized configuration: figures per component, and its role in the fit."""

    config: ArrayConfig
    components: dict[str, dict[str, int]]
    role: str = "fit"


def load_points(path: Path = DATA_PATH) -> list[Point]:
    """Read the synthesized points (bench/bench_area_model.py writes them)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return [Point(_config(entry["config"]), entry["components"], entry.get("role", "fit"))
            for entry in raw["points"]]  # fmt: skip


def _config(fields: dict[str, object]) -> ArrayConfig:
    """Return the configuration `ArrayConfig.to_dict` gave as `fields`."""
    without = parse_units(",".join(fields.get("without", ())))  # type: ignore[arg-type]
    return ArrayConfig(**(fields | {"dataflow": Dataflow.parse(str(fields["dataflow"])),  # type: ignore[arg-type]
                                    "without": without}))


def fit(points: Sequence[Point]) -> dict[str, dict[str, list[float]]]:
    """Return least-squares coefficients per component and figure (aligned with `FEATURES`)."""
    coefficients: dict[str, dict[str, list[float]]] = {}
    for component, names in FEATURES.items():
        matrix = np.array([[_features(p.config)[n] for n in names] for p in points])
        coefficients[component] = {}
        for figure in FIGURES:
            target = np.array([float(p.components[component][figure]) for p in points])
            solution, *_ = np.linalg.lstsq(matrix, target, rcond=None)
            coefficients[component][figure] = [float(value) for value in solution]
    return coefficients


def save_coefficients(coefficients: dict[str, dict[str, list[float]]],
                      path: Path = COEFFICIENTS_PATH) -> None:
    path.write_text(json.dumps({"features": FEATURES, "coefficients": coefficients}, indent=1)
                    + "\n", encoding="utf-8")  # fmt: skip


def load_coefficients(path: Path = COEFFICIENTS_PATH) -> dict[str, dict[str, list[float]]]:
    coefficients: dict[str, dict[str, list[float]]] = json.loads(
        path.read_text(encoding="utf-8"))["coefficients"]
    return coefficients


def estimate(config: ArrayConfig, coefficients: dict[str, dict[str, list[float]]] | None = None,
             ) -> dict[str, dict[str, float]]:
    """Return the predicted figures per component (never below 0; `BOTH_FACTORS` applied to an
    array of both dataflows; the savings of the units `config` leaves out applied by
    `area_without.apply_savings`)."""
    table = coefficients if coefficients is not None else load_coefficients()
    values = _features(config)
    both = config.dataflow is Dataflow.BOTH
    whole = {
        component: {
            figure: max(0.0, sum(c * values[n] for c, n in zip(
                table[component][figure], FEATURES[component], strict=True)))
            * (BOTH_FACTORS.get(component, {}).get(figure, 1.0) if both else 1.0)
            for figure in FIGURES
        }
        for component in FEATURES
    }
    return apply_savings(whole, config)


def _area(figures: dict[str, float]) -> float:
    logic_cells = figures["cells"]
    return (figures["memory_bits"] * DENSITY["sram_um2_per_bit"]
            + figures["flip_flops"] * DENSITY["flip_flop_um2"]
            + logic_cells * DENSITY["cell_um2"]) * 1e-6  # fmt: skip


def area_mm2(config: ArrayConfig, coefficients: dict[str, dict[str, list[float]]] | None = None,
             ) -> float:
    """Return the configuration's estimated area in mm² at the `DENSITY` assumptions."""
    return sum(_area(figures) for figures in estimate(config, coefficients).values())


def relative_errors(coefficients: dict[str, dict[str, list[float]]], point: Point,
                    ) -> dict[str, float]:
    """Return |predicted - synthesized| / synthesized of each component's area (at `DENSITY`)
    and of the total ("total"), for one point; a component of zero area is left out."""
    predicted = estimate(point.config, coefficients)
    errors = {}
    for component, figures in predicted.items():
        actual = _area({f: float(point.components[component][f]) for f in FIGURES})
        if actual > 0:
            errors[component] = abs(_area(figures) - actual) / actual
    actual_total = sum(_area({f: float(v[f]) for f in FIGURES}) for v in point.components.values())
    errors["total"] = abs(area_mm2(point.config, coefficients) - actual_total) / actual_total
    return errors


def evaluate(coefficients: dict[str, dict[str, list[float]]], points: Sequence[Point],
             ) -> list[str]:
    """Return one line per point: its relative area error per component and in total."""
    lines = []
    for point in points:
        errors = relative_errors(coefficients, point)
        parts = ", ".join(f"{name} {100 * value:.1f}%" for name, value in errors.items()
                          if not math.isnan(value))
        config = point.config
        lines.append(f"{config.shape_text} spad {config.spad_kib} acc {config.acc_kib}: "
                     f"area {area_mm2(config, coefficients):.3f} mm² predicted; errors {parts}")
    return lines
