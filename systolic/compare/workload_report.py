"""What `systolic compare` writes over a workload: the keys the JSON gains and the CSV with
its workload columns (the text table: `workload_table`).

JSON (`systolic.compare/1`, keys only added): every `configurations[]` entry (one per
(configuration, model), configuration-major) gains `model`, `weight`, `time_ms` (its cycles at
the clock) and `pareto` (its configuration's mark); the document gains `clock_mhz` and
`workload`: {`models`: [{model, weight}], `configurations`: one per configuration
(`WorkloadResult.to_json`: label, config, cycles per model, weighted_cycles, time_ms, pes,
sram_kib, energy_pj, area_mm2, pareto, error)}.

CSV: the columns of `tables.CSV_COLUMNS`, then `EXTRA_COLUMNS`: `model`, `weight`, `time_ms`
(the row's cycles at the clock), `pareto` (true/false, its configuration's mark) and `error`
(on the `(total)` row of a model the configuration could not run). With several models, each
configuration ends with a `(workload)` row: cycles are the weighted cycles.
"""

import csv
import io
from collections.abc import Sequence
from typing import Any

from systolic.compare.result import ConfigResult
from systolic.compare.tables import CSV_COLUMNS, TOTAL_ROW, to_csv
from systolic.compare.workload import WorkloadResult, cycles_to_ms

__all__ = ["EXTRA_COLUMNS", "WORKLOAD_ROW", "flat_results", "workload_csv", "workload_json"]

EXTRA_COLUMNS = ("model", "weight", "time_ms", "pareto", "error")
WORKLOAD_ROW = "(workload)"
"""The `layer` cell of a configuration's weighted row in the CSV (several models)."""
_CYCLES = CSV_COLUMNS.index("cycles")


def flat_results(workload: Sequence[WorkloadResult]) -> list[ConfigResult]:
    """Return every (configuration, model) result, configuration-major."""
    return [result for entry in workload for result in entry.results]


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def workload_json(document: dict[str, Any], workload: Sequence[WorkloadResult]) -> dict[str, Any]:
    """Add the workload keys (module docstring) to a report made of `flat_results(workload)`."""
    entries = iter(document["configurations"])
    for entry in workload:
        for model, result in zip(entry.models, entry.results, strict=True):
            time = cycles_to_ms(result.total_cycles, entry.clock_mhz)
            next(entries).update(model=model.path, weight=_number(model.weight),
                                 time_ms=None if result.failed else round(time, 9),
                                 pareto=entry.pareto)  # fmt: skip
    models = workload[0].models if workload else ()
    document["clock_mhz"] = _number(workload[0].clock_mhz) if workload else None
    document["workload"] = {"models": [model.to_json() for model in models],
                            "configurations": [entry.to_json() for entry in workload]}  # fmt: skip
    return document


def workload_csv(workload: Sequence[WorkloadResult]) -> str:
    """Return the CSV (module docstring): `tables.to_csv`'s rows with the workload columns."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*CSV_COLUMNS, *EXTRA_COLUMNS])
    for entry in workload:
        pareto = "true" if entry.pareto else "false"
        for model, result in zip(entry.models, entry.results, strict=True):
            for row in list(csv.reader(io.StringIO(to_csv([result]))))[1:]:
                time = f"{cycles_to_ms(int(row[_CYCLES]), entry.clock_mhz):.9f}"
                error = result.error if row[CSV_COLUMNS.index("layer")] == TOTAL_ROW else ""
                writer.writerow([*row, model.path, _number(model.weight), time, pareto, error])
        if len(entry.models) > 1:
            writer.writerow(_workload_row(entry, pareto))
    return out.getvalue()


def _workload_row(entry: WorkloadResult, pareto: str) -> list[object]:
    c = entry.config
    cells: list[object] = [entry.label, c.rows, c.cols, c.dataflow.value, c.spad_kib, c.acc_kib,
                           c.bus_bytes, c.mem_latency, WORKLOAD_ROW, "", "all"]  # fmt: skip
    cells += [""] * (len(CSV_COLUMNS) - len(cells))
    failed = bool(entry.error)
    cells[_CYCLES] = "" if failed else _number(entry.weighted_cycles)
    energy = entry.energy_pj
    cells[CSV_COLUMNS.index("energy_pj")] = "" if failed or energy is None else f"{energy:.3f}"
    return [*cells, "", "", "" if failed else f"{entry.time_ms:.9f}", pareto, entry.error]
