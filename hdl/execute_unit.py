"""`ExecuteUnit`: PRELOAD / COMPUTE (weight-stationary) and COMPUTE.OS on the systolic array
(one family, or both on an array of `Dataflow.BOTH`).

The exact cycle of every acceptance and completion is `systolic.sim.timing.execute_timing`
(docs/hardware.md, "EXECUTE unit", states the rules).
"""

from amaranth import Module, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig, Dataflow
from systolic.hdl.accumulator import write_payload_layout
from systolic.hdl.execute_both import elaborate_both
from systolic.hdl.execute_os import elaborate_os
from systolic.hdl.execute_ports import done_layout
from systolic.hdl.execute_ws import elaborate_ws
from systolic.hdl.instruction_fields import INSTRUCTION_STREAM_LAYOUT
from systolic.hdl.ports import memory_read_signature, spad_row_layout
from systolic.hdl.systolic_array import SystolicArray
from systolic.isa.memories import Memory, depth

__all__ = ["ExecuteUnit", "execute_events_layout"]


def execute_events_layout(config: ArrayConfig) -> data.StructLayout:
    """Return the layout of the EXECUTE unit's event strobes (docs/energy.md, "RTL counters"):
    {beat: an array beat that counts (`rows·cols` slots), macs: its products with an active
    weight and operand, spad_in_read, spad_wt_read: a row read the instruction uses}."""
    return data.StructLayout({"beat": 1, "macs": range(config.pes + 1), "spad_in_read": 1,
                              "spad_wt_read": 1})


class ExecuteUnit(wiring.Component):
    """The EXECUTE unit: reads `spad_in`/`spad_wt`, drives the array, writes the accumulator.

    Instructions arrive in program order on `i_instr` ({`payload`: the word, `tag`}); the unit
    takes one when the engine it needs is free (see the timing model) and reports each
    instruction's completion with its tag. Words of other opcodes are a caller error (never taken).

    Weight-stationary: a *weight engine* streams PRELOAD rows `spad_wt[row + r]` (`r < rows`;
    rows `r >= k` and lanes `>= n` as zeros) into the array's shadow weights, while an
    *activation engine* streams COMPUTE rows `spad_in[in_row + i]`. PRELOAD completes in the
    cycle its last weight row is taken by the array; COMPUTE in the cycle its last result row is
    taken by the accumulator stream. After reset the unit loads a zero weight tile (as the ISA's
    initial weights) and the array runs one open tile: a COMPUTE continues the current tile
    (same weights), and a PRELOAD closes it (`last` on the running COMPUTE's final row, or a
    one-row dummy beat whose result is discarded) so that the next COMPUTE's first row activates
    the new weights. Two PRELOADs in a row: the dummy activates the first one's weights, which no
    COMPUTE can observe before the second one's replace them.

    Weight-stationary: `execute_ws.elaborate_ws`; output-stationary: `execute_os.elaborate_os`.
    Both dataflows (`Dataflow.BOTH`): both
    sequencers on one array of `BothPE`s, the instruction choosing (`execute_both`).

    Members
    -------
    i_instr: In(stream.Signature(INSTRUCTION_STREAM_LAYOUT))
        Instruction words (`payload`) and their table tags, in program order.
    o_preload_done, o_compute_done: Out(done_layout())
        Completion strobes {valid, tag}, one cycle each (a PRELOAD and a COMPUTE may complete
        in the same cycle, hence two).
    spad_in, spad_wt: Out(memory_read_signature(...))
        Read ports (1-cycle synchronous) of the scratchpads; rows of `dim` signed operands.
    o_acc: Out(stream.Signature(write_payload_layout(acc_depth, cols, acc_width)))
        Accumulator writes {row, data, accumulate}; the unit holds while `ready` is low.
    o_events: Out(execute_events_layout(config))
        Energy event strobes of this cycle (observation only): WS `beat` is an array beat of a
        COMPUTE row (not a dummy row), `macs` its `k·n` products with the weights of the last
        PRELOAD taken before that COMPUTE (0 after reset); OS `beat` is every array beat and
        `macs` `m·n`; `spad_in_read`/`spad_wt_read` are the row reads an instruction uses (not
        the idle enables, docs/energy.md).

    Latency, throughput, backpressure: `systolic.sim.timing.execute_timing` gives the exact
    cycles (with an always-ready accumulator): one array row per cycle, PRELOAD overlapping the
    previous COMPUTE, no idle array cycle back to back when `m >= rows` (WS) or every k-chunk is
    at least `m` wide (OS). While `o_acc.ready` is low the array and both engines hold; results
    stay exact. `i_instr.ready` depends combinationally on `i_instr.payload` (the opcode) and on
    the array's input `ready`s (hence on `o_acc.ready`).
    """

    def __init__(self, config: ArrayConfig) -> None:
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # rejected, not unused
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self.config = config
        self.tag_width = tag_width = INSTRUCTION_STREAM_LAYOUT["tag"].width
        super().__init__({
            "i_instr": In(stream.Signature(INSTRUCTION_STREAM_LAYOUT)),
            "o_preload_done": Out(done_layout(tag_width)),
            "o_compute_done": Out(done_layout(tag_width)),
            "spad_in": Out(memory_read_signature(
                depth(config, Memory.SPAD_IN), spad_row_layout(config.input_width, config.dim))),
            "spad_wt": Out(memory_read_signature(
                depth(config, Memory.SPAD_WT), spad_row_layout(config.weight_width, config.dim))),
            "o_acc": Out(stream.Signature(
                write_payload_layout(config.acc_depth, config.cols, config.acc_width))),
            "o_events": Out(execute_events_layout(config)),
        })

    def elaborate(self, platform: object) -> Module:
        m = Module()
        m.submodules.array = array = SystolicArray(self.config)
        if self.config.dataflow is Dataflow.WS:
            elaborate_ws(m, self, array)
        elif self.config.dataflow is Dataflow.OS:
            elaborate_os(m, self, array)
        else:
            elaborate_both(m, self, array, self._elaborate_ws)
        return m

    def _elaborate_ws(self, m: Module, array: SystolicArray, ports: "ExecuteUnit") -> Value:
        """Write the weight-stationary sequencer driving `ports` (this unit, or its WS half's
        view) and `array`; return its idle signal (the callback `elaborate_both` takes)."""
        return elaborate_ws(m, ports, array)
