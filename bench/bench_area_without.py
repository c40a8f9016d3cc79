"""Measure what leaving the optional units out saves, for the area model.

    python bench/bench_area_without.py                  # synthesize the four 8x8 designs
    python bench/bench_area_without.py --reports DIR    # read DIR/report_<without>.json

The 8x8 (8 KiB scratchpad and accumulator) is synthesized whole, without the row unit,
without the activation table and without both, with Yosys' coarse generic flow, hierarchy
kept (`systolic.verilog.synth`, minutes each); `--reports DIR` reads instead the JSON that
`systolic verilog --array 8x8 --spad-kib 8 --acc-kib 8 --without W --report --json
DIR/report_W.json` wrote (W: none, row-unit, tables, row-unit,tables). The figures per
component go to systolic/compare/area_without.json; the savings per unit
(`systolic.compare.area_without.savings`) are printed, and the prediction for both units
left out (the sum of the two savings) against its measurement.
"""

import argparse
import dataclasses
import json
from pathlib import Path

from systolic.compare.area_model import FIGURES, _area
from systolic.compare.area_without import WITHOUT_PATH, savings
from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import parse_units, units_text
from systolic.verilog.bundle import render_bundle
from systolic.verilog.synth import synthesize

BASE = ArrayConfig(rows=8, cols=8, spad_kib=8, acc_kib=8)
CHOICES = ("none", "row-unit", "tables", "row-unit,tables")


def _components(report: dict) -> dict[str, dict[str, int]]:
    return {name: {figure: int(values[figure]) for figure in FIGURES}
            for name, values in report["components"].items()}


def _synthesized(config: ArrayConfig) -> dict:
    bundle = render_bundle(config)
    folder = Path("/tmp") / f"area_without_{bundle.top}"
    folder.mkdir(exist_ok=True)
    path = folder / bundle.verilog_name
    path.write_text(bundle.files[bundle.verilog_name], encoding="utf-8")
    return synthesize(path, bundle.top).to_dict()


def measure(reports: Path | None) -> list[dict]:
    entries = []
    for choice in CHOICES:
        config = dataclasses.replace(BASE, without=parse_units(choice))
        report = (json.loads((reports / f"report_{choice}.json").read_text())["synthesis"]
                  if reports else _synthesized(config))
        entries.append({"without": units_text(config.without).split(",") if config.without
                        else [], "config": config.to_dict(), "yosys": report["yosys"],
                        "components": _components(report)})
        print(f"without {choice}: {sum(c['cells'] for c in entries[-1]['components'].values()):,}"
              " cells", flush=True)
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=Path, help="read `systolic verilog --json` reports")
    args = parser.parse_args()
    entries = measure(args.reports)
    WITHOUT_PATH.write_text(json.dumps({"measurements": entries}, indent=1) + "\n",
                            encoding="utf-8")
    for unit in OptionalUnit:
        print(f"saving without {unit.value}:")
        for component, figures in savings(frozenset({unit})).items():
            if any(figures.values()):
                print(f"  {component}: " + ", ".join(f"{f} {100 * v:+.1f}%"
                                                     for f, v in figures.items() if v))
    whole, both = entries[0]["components"], entries[-1]["components"]
    summed = savings(frozenset({OptionalUnit.ROW_UNIT})), savings(frozenset({OptionalUnit.TABLES}))
    predicted = {c: {f: v * (1 - summed[0][c][f] - summed[1][c][f]) for f, v in figs.items()}
                 for c, figs in whole.items()}
    area = {name: sum(_area({f: float(v) for f, v in figs.items()}) for figs in comps.values())
            for name, comps in (("whole", whole), ("both", both), ("predicted", predicted))}
    print(f"area at the model's densities: whole {area['whole']:.4f} mm², without both "
          f"{area['both']:.4f} mm² measured, {area['predicted']:.4f} mm² from the summed "
          f"savings ({100 * (area['predicted'] / area['both'] - 1):+.2f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
