"""What leaving optional units out (`ArrayConfig.without`) saves, for the area model.

The measurements are package data (area_without.json): the components' figures (Yosys'
generic coarse synthesis, `systolic verilog --report`) of one configuration built whole and
without each optional unit, all from the same design. Per unit, component and figure, the
*saving* is the fraction of the whole design's figure that leaving that unit out removes
(negative when it adds: without the row-normalisation unit the vector unit computes ADD
`mul`'s products in its own multipliers instead of borrowing the row unit's). `apply_savings`
scales an estimate of the whole design by 1 − the saving of the units the configuration
leaves out: the measured one for that set of units, or the sum of the units' own savings
(bench/README.md, "Session 12 (optional units; lane E)", compares the sum with the
measurement of both units left out). The savings are measured
at 8x8 and applied at every size: the row unit and the activation table grow with dim as the
rest of their components do (one lane per scratchpad column).
"""

import json
from functools import cache
from pathlib import Path

from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import parse_units

__all__ = ["WITHOUT_PATH", "apply_savings", "savings"]

WITHOUT_PATH = Path(__file__).with_name("area_without.json")

Figures = dict[str, dict[str, float]]  # component -> figure -> value


@cache
def _measured(path: Path = WITHOUT_PATH) -> dict[frozenset[OptionalUnit], Figures]:
    """Return the stored figures by the set of units left out."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {parse_units(",".join(entry["without"])): entry["components"]
            for entry in raw["measurements"]}


def savings(units: frozenset[OptionalUnit], path: Path = WITHOUT_PATH) -> Figures:
    """Return, per component and figure, the fraction of the whole design's figure that
    leaving `units` out removes (0 where the whole design has none of that figure): measured
    when that set was, else the sum of each unit's own saving."""
    measured = _measured(path)
    whole = measured[frozenset()]
    if units in measured:
        return {component: {figure: (value - measured[units][component][figure]) / value
                             if value else 0.0 for figure, value in figures.items()}
                for component, figures in whole.items()}
    parts = [savings(frozenset({unit}), path) for unit in OptionalUnit if unit in units]
    return {component: {figure: sum(part[component][figure] for part in parts)
                        for figure in figures}
            for component, figures in whole.items()}


def apply_savings(estimate: Figures, config: ArrayConfig, path: Path = WITHOUT_PATH
                  ) -> Figures:
    """Return `estimate` (figures of the whole design for `config`) scaled by 1 − the saving
    of the units `config` leaves out (never below 0); unchanged when it leaves none out."""
    if not config.without:
        return estimate
    saved = savings(config.without, path)
    return {component: {figure: max(0.0, value * (1.0 - saved.get(component, {}).get(figure, 0.0)))
                        for figure, value in figures.items()}
            for component, figures in estimate.items()}
