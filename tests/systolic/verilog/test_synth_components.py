"""`systolic.verilog.synth_components`: per-module `stat -json` figures summed per component."""

from systolic.verilog.synth_components import (
    ORDER,
    component_figures,
    component_of,
    memory_declarations,
    render_components,
)


def test_paths_map_to_their_nearest_listed_ancestor() -> None:
    assert component_of("execute.array.mesh") == "pe_array"
    assert component_of("execute.meta_fifo") == "execute_control"
    assert component_of("store.table") == "vector_unit"
    assert component_of("store.writer") == "store"
    assert component_of("load.walker") == "dma"
    assert component_of("dispatcher.queue0") == "dispatcher"
    assert component_of("") == "glue"
    assert component_of("something_new") == "glue"


def test_memory_declarations_per_module() -> None:
    verilog = ("module top(clk);\n  reg [15:0] spad_in [2047:0];\n  reg [143:0] params [511:0];\n"
               "endmodule\nmodule \\top.acc (clk);\n  reg [63:0] memory [255:0];\nendmodule\n")
    assert memory_declarations(verilog, "top") == {
        "": {"spad_in": 16 * 2048, "params": 144 * 512}, "acc": {"memory": 64 * 256},
    }


def _stats(cells: dict[str, int], transistors: str | None = None) -> dict[str, object]:
    stats: dict[str, object] = {"num_cells_by_type": cells}
    if transistors is not None:
        stats["estimated_num_transistors"] = transistors
    return stats


def test_figures_are_summed_per_component_and_transistors_are_each_modules_own() -> None:
    coarse = {"modules": {
        "\\top": _stats({"$add_4": 1, "top.execute": 1, "top.acc": 1}),
        "\\top.execute": _stats({"$sdff_8": 2, "top.execute.array": 1}),
        "\\top.execute.array": _stats({"$mul_16": 3, "$dff_16": 3, "$scopeinfo": 1}),
        "\\top.acc": _stats({"$mem_v2": 1}),
    }}
    rtl = {"modules": {"\\top": {"num_memory_bits": 96}, "\\top.acc": {"num_memory_bits": 64}}}
    gates = {"modules": {  # Yosys' per-module estimate includes the submodules'
        "\\top": _stats({"$_AND_": 1, "top.execute": 1, "top.acc": 1}, "1000"),
        "\\top.execute": _stats({"top.execute.array": 1}, "900"),
        "\\top.execute.array": _stats({"$_XOR_": 50}, "600"),
        "\\top.acc": _stats({}, "0"),
    }}
    memories = {"": {"spad_in": 32, "spad_wt": 32, "params": 32}, "acc": {"memory": 64}}
    figures = component_figures("top", rtl, coarse, gates, memories)
    assert list(figures) == list(ORDER)
    array = figures["pe_array"]
    assert (array.cells, array.flip_flops, array.multipliers, array.transistors) == (6, 48, 3, 600)
    control = figures["execute_control"]
    assert (control.cells, control.flip_flops, control.transistors) == (2, 16, 300)
    assert figures["glue"].transistors == 100 and figures["glue"].cells == 1
    assert figures["scratchpad"].memories == {"spad_in": 32, "spad_wt": 32}
    assert figures["params"].memory_bits == 32
    assert figures["accumulator"].memories == {"acc.memory": 64}
    assert sum(f.memory_bits for f in figures.values()) == 96 + 64
    unmapped = component_figures("top", rtl, coarse, None, memories)
    assert all(f.transistors is None for f in unmapped.values())


def test_an_unknown_transistor_count_stays_unknown() -> None:
    gates = {"modules": {"\\top": _stats({"$_DLATCH_P_": 1}, "12+")}}
    figures = component_figures("top", {}, {"modules": {}}, gates)
    assert figures["glue"].transistors is None and figures["pe_array"].transistors == 0


def test_table_lists_every_component_with_transistors_when_mapped() -> None:
    figures = component_figures("top", {}, {"modules": {"\\top": _stats({"$add_4": 1234})}})
    lines = render_components({name: f.to_dict() for name, f in figures.items()})
    assert lines[0].split() == ["component", "cells", "flip-flops", "multipliers", "memory", "bits"]
    assert len(lines) == 1 + len(ORDER)
    assert lines[-1].split() == ["glue", "1,234", "0", "0", "0"]
    mapped = {name: f.to_dict() | {"transistors": 7} for name, f in figures.items()}
    assert render_components(mapped)[0].split()[-1] == "transistors"
