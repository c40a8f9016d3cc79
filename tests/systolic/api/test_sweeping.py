import csv
import io

import systolic
from systolic.compare.sweep import prepare_model, sweep
from systolic.examples import example_path


def test_sweep_is_the_flow_of_systolic_compare() -> None:
    configs = systolic.configurations(arrays=["4x4", "8x4"], bus_bytes=[8, 16])
    result = systolic.sweep(None, configs)
    flow = sweep(prepare_model(example_path()), configs)
    assert result.results == tuple(flow)
    assert result.to_json()["configurations"] == [r.to_json() for r in flow]
    assert result.summary.column("total_cycles") == tuple(r.total_cycles for r in flow)
    per_config = {label: 0 for label in result.summary.column("configuration")}
    for row in result.layers.dicts():
        per_config[row["configuration"]] += row["cycles"]
    assert tuple(per_config.values()) == result.summary.column("total_cycles")
    rows = list(csv.DictReader(io.StringIO(result.to_csv())))
    assert len(rows) == len(result.layers) + len(configs)


def test_default_configurations_are_both_dataflows_on_8x8() -> None:
    result = systolic.sweep(None)
    assert result.summary.column("configuration") == ("ws", "os")
    assert "<table>" in result._repr_html_()
