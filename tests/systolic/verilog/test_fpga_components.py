"""`systolic.verilog.fpga_components`: Yosys' cells counted by the accelerator's unit."""

from systolic.verilog.fpga_components import component_cells


def _netlist(cells: dict[str, str]) -> dict:
    return {"modules": {"harness": {"cells": {name: {"type": kind}
                                              for name, kind in cells.items()}}}}


def test_cells_count_by_unit_kind_and_order() -> None:
    netlist = _netlist({
        "accelerator.load.walker.x_LUT4_Z": "LUT4",
        "accelerator.load.walker.x_CCU2C_S0": "CCU2C",
        "accelerator.load.gather.y_PFUMX_Z": "PFUMX",
        "accelerator.load.q_TRELLIS_FF_Q": "TRELLIS_FF",
        "accelerator.store.stage.p_MULT18X18D": "MULT18X18D",
        "accelerator.store.stage.p_L6MUX21": "L6MUX21",
        "accelerator.acc.mem.DP16KD": "DP16KD",
        "accelerator.done_LUT4_B_Z": "LUT4",  # a net of the accelerator's own module
        "accelerator.$auto$x": "LUT4",
        "chain_out_TRELLIS_FF_Q_4": "TRELLIS_FF",  # the harness
        "accelerator.store.$specify": "$specify2",  # not counted
    })
    counts = component_cells(netlist, "harness")
    assert list(counts) == ["load", "top", "store", "acc", "other"]
    assert counts["load"] == {"logic": 3, "flip_flops": 1, "dsps": 0, "brams": 0}
    assert counts["top"] == {"logic": 2, "flip_flops": 0, "dsps": 0, "brams": 0}
    assert counts["store"] == {"logic": 1, "flip_flops": 0, "dsps": 1, "brams": 0}
    assert counts["acc"] == {"logic": 0, "flip_flops": 0, "dsps": 0, "brams": 1}
    assert counts["other"] == {"logic": 0, "flip_flops": 1, "dsps": 0, "brams": 0}


def test_a_netlist_without_counted_cells_has_no_units() -> None:
    assert component_cells(_netlist({"x": "$scopeinfo"}), "harness") == {}


def test_nexus_and_gowin_cells_count_in_the_same_kinds() -> None:
    netlist = _netlist({
        "accelerator.load.a_WIDEFN9_Z": "WIDEFN9",  # Nexus
        "accelerator.load.b_CCU2_S0": "CCU2",
        "accelerator.load.c_FD1P3IX_Q": "FD1P3IX",
        "accelerator.load.d_MULT18X36_Z": "MULT18X36",
        "accelerator.load.e_PDPSC16K": "PDPSC16K",
        "accelerator.store.f_MUX2_LUT5_O": "MUX2_LUT5",  # Gowin
        "accelerator.store.g_ALU_SUM": "ALU",
        "accelerator.store.h_DFFNRE_Q": "DFFNRE",
        "accelerator.store.i_MULT9X9_DOUT": "MULT9X9",
        "accelerator.store.j_SDPX9B": "SDPX9B",
    })
    counts = component_cells(netlist, "harness")
    assert counts["load"] == {"logic": 2, "flip_flops": 1, "dsps": 1, "brams": 1}
    assert counts["store"] == {"logic": 2, "flip_flops": 1, "dsps": 1, "brams": 1}
