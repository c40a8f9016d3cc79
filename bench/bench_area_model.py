"""Synthesize several configurations per component and fit the analytic area model.

    python bench/bench_area_model.py            # synthesize missing points, fit, print
    python bench/bench_area_model.py --fit-only # fit and print from the stored points

Each configuration is emitted (`systolic.verilog.bundle`) and synthesized with Yosys' coarse
generic flow, hierarchy kept (`systolic.verilog.synth`, the `synth` extra; seconds for 2x2,
minutes for 8x8 on two cores); the per-component figures are stored in
systolic/compare/area_data.json (points already there are not synthesized again). The fit
(`systolic.compare.area_model.fit`) uses the points marked "fit"; the others are held out and
the relative error of the model's prediction on them is printed per component and in total.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from systolic.compare.area_model import (
    DATA_PATH,
    FIGURES,
    evaluate,
    fit,
    load_points,
    save_coefficients,
)
from systolic.config import ArrayConfig
from systolic.verilog.bundle import render_bundle
from systolic.verilog.synth import synthesize

SMALL = {"spad_kib": 8, "acc_kib": 2}
POINTS = [  # (configuration, role): the fit set and the held-out set
    (ArrayConfig(rows=2, cols=2, **SMALL), "fit"),
    (ArrayConfig(rows=2, cols=4, **SMALL), "fit"),
    (ArrayConfig(rows=4, cols=4, **SMALL), "fit"),
    (ArrayConfig(rows=2, cols=2, spad_kib=16, acc_kib=4), "fit"),
    (ArrayConfig(rows=4, cols=8, **SMALL), "fit"),  # dim 8: the store path is not linear in dim
    (ArrayConfig(rows=4, cols=4, spad_kib=32, acc_kib=8), "held_out"),
    (ArrayConfig(rows=8, cols=8, **SMALL), "held_out"),
]


def key(config: ArrayConfig) -> str:
    return json.dumps(config.to_dict(), sort_keys=True)


def synthesize_point(config: ArrayConfig) -> dict[str, object]:
    bundle = render_bundle(config)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / bundle.verilog_name
        path.write_text(bundle.files[bundle.verilog_name], encoding="utf-8")
        started = time.monotonic()
        report = synthesize(path, bundle.top)
    print(f"  {config.shape_text} spad {config.spad_kib} KiB acc {config.acc_kib} KiB: "
          f"{report.cells:,} cells, {time.monotonic() - started:.0f} s", flush=True)
    return {"config": config.to_dict(), "yosys": report.yosys, "seconds": report.seconds,
            "components": {name: {figure: figures[figure] for figure in FIGURES}
                           for name, figures in report.components.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit-only", action="store_true", help="no synthesis: fit the stored points")
    args = parser.parse_args()
    raw = json.loads(DATA_PATH.read_text()) if DATA_PATH.exists() else {"points": []}
    entries = {json.dumps(e["config"], sort_keys=True): e for e in raw["points"]}
    for config, role in POINTS:
        if key(config) not in entries and not args.fit_only:
            entries[key(config)] = synthesize_point(config)
        if key(config) in entries:
            entries[key(config)]["role"] = role
            raw["points"] = list(entries.values())
            DATA_PATH.write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")
    points = load_points()
    for point in points:
        print(f"{point.config.shape_text} spad {point.config.spad_kib} KiB acc "
              f"{point.config.acc_kib} KiB ({point.role}): "
              + ", ".join(f"{name} {v['cells']}/{v['flip_flops']}/{v['memory_bits']}"
                          for name, v in point.components.items()))
    print("(per component: cells / flip-flop bits / memory bits)")
    fitted = fit([p for p in points if p.role == "fit"])
    save_coefficients(fitted)
    held = [p for p in points if p.role == "held_out"]
    print(f"fitted on {sum(p.role == 'fit' for p in points)} points; held out: {len(held)}")
    for row in evaluate(fitted, held):
        print("  " + row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
