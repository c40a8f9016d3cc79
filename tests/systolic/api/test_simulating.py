import systolic
from systolic.config import ArrayConfig
from systolic.examples import example_path
from systolic.sim.energy.table import EnergyTable
from systolic.simulation.energy import with_energy
from systolic.simulation.run import simulate_model


def test_simulate_is_the_flow_of_systolic_simulate() -> None:
    config = ArrayConfig(rows=4, cols=4)
    run = systolic.simulate(None, config, backend="model", seed=3)
    flow = simulate_model(example_path(), config, label="bundled:lenet_qdq", backend="model",
                          seed=3, compare_onnxruntime=False)  # fmt: skip
    assert flow.compiled is not None
    report = with_energy(flow.report, flow.compiled, EnergyTable.default())  # as the CLI does
    assert run.to_json() == report.to_json()
    assert run.energy_uj == report.energy.total_pj * 1e-6 > 0
    assert run.layers.column("cycles") == tuple(layer.cycles for layer in flow.report.layers)
    assert run.heading in str(run)
    assert "conv1_Conv" in run._repr_html_()


def test_a_model_path_is_labelled_by_its_path() -> None:
    run = systolic.simulate(example_path(), backend="model")
    assert run.report.model == str(example_path())
    assert run.bit_exact
