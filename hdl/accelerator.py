"""`Accelerator`: the whole accelerator, dispatcher, units and memories behind one command port."""

from typing import Any

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory as RamBlock
from amaranth.lib.wiring import In, Out

from systolic.config import ArrayConfig
from systolic.hdl.accumulator import Accumulator
from systolic.hdl.completion_merge import CompletionMerge
from systolic.hdl.dispatcher import Dispatcher
from systolic.hdl.entry_tracker import EntryTracker
from systolic.hdl.event_counters import (
    EVENT_WIDTH,
    RTL_EVENTS,
    EventCounters,
    event_increments,
    events_signature,
)
from systolic.hdl.execute_ports import done_layout
from systolic.hdl.execute_unit import ExecuteUnit
from systolic.hdl.instruction_fields import TAG_WIDTH
from systolic.hdl.load_unit import LoadUnit
from systolic.hdl.ports import params_row_layout, spad_row_layout, write_beat_layout
from systolic.hdl.range_overlap import footprint_layout, onchip_addr_width
from systolic.hdl.run_counters import RunCounters
from systolic.hdl.store_unit import StoreUnit, store_events_layout
from systolic.isa.fields import INSTRUCTION_BITS
from systolic.isa.instructions import Store
from systolic.isa.memories import PARAMS_DEPTH, Memory, depth

__all__ = [
    "ADDR_WIDTH",
    "HALT_UNIT",
    "QUEUE_DEPTH",
    "RANGES",
    "TABLE_ENTRIES",
    "UNITS",
    "Accelerator",
    "command_layout",
    "trace_signature",
]

UNITS = 3
"""Units behind the dispatcher: LD = 0, EX = 1, ST = 2."""
HALT_UNIT = 3
"""The `unit` value of a HALT command (it never enters the dispatcher)."""
TABLE_ENTRIES = 16
QUEUE_DEPTH = 4
RANGES = 3
ADDR_WIDTH = 32
COUNTER_WIDTH = 64


def command_layout() -> data.StructLayout:
    """Return the layout of one command on `i_instr`: {payload: 512, unit: 2, ranges}."""
    return data.StructLayout({
        "payload": INSTRUCTION_BITS,
        "unit": 2,
        "ranges": footprint_layout(RANGES, ADDR_WIDTH),
    })


def trace_signature() -> wiring.Signature:
    """Return the trace port: one-cycle strobes {valid, tag} of accepts, issues, completions."""
    return wiring.Signature({
        "accept": Out(done_layout(TAG_WIDTH)),
        "issue": Out(done_layout(TAG_WIDTH)).array(UNITS),
        "complete": Out(done_layout(TAG_WIDTH)).array(UNITS),
    })


class Accelerator(wiring.Component):
    """The accelerator of docs/isa.md: run a program's commands to HALT.

    Instances: the `Dispatcher` (3 units, 16 table entries, queues of 4), `LoadUnit`,
    `ExecuteUnit`, `StoreUnit`, the `Accumulator`, and the memories `spad_in` (one write port:
    LD; read port 0: EX; read port 1: ST), `spad_wt` (LD writes, EX reads) and `params` (LD
    writes, ST reads), `amaranth.lib.memory.Memory` with synchronous, non-transparent reads.
    EX's two completion strobes are merged by `CompletionMerge` (in order, one per cycle: a
    PRELOAD completing in the same cycle as a COMPUTE reaches the dispatcher one cycle later).

    Members
    -------
    start : ``In(1)``
        One-cycle strobe while idle: clears `done` and every counter; `busy` from the next cycle.
    busy, done : ``Out(1)``
        `busy` from the cycle after `start` until the cycle HALT is accepted (inclusive);
        `done` from the cycle after that until the next `start`.
    i_instr : ``In(stream.Signature(command_layout()))``
        Commands in program order: {payload: the instruction word, unit: 0 LD / 1 EX / 2 ST /
        3 HALT, ranges: the footprint (`systolic.sim.rtl.commands.encode_command`)}. `ready`
        only while `busy`; a HALT is accepted when every earlier instruction has completed.
    o_mem_req : ``Out(stream.Signature({addr: 32}))``
        External read requests (aligned to `bus_bytes`).
    i_mem_resp : ``In(stream.Signature({data: 8·bus_bytes}))``
        Read data, exactly `config.mem_latency` cycles after each request was taken; never
        backpressured (`ready` is 1).
    o_mem_write : ``Out(stream.Signature(write_beat_layout(bus_bytes)))``
        External writes {addr (aligned), data, strobe}.
    cycles, instructions, dispatch_stall : ``Out(64)``
    unit_busy, hazard_stall : ``Out(64).array(3)``
        Counters (docs/hardware.md, "Accelerator"), cleared by `start`, counting while `busy`.
    events : ``Out(events_signature(RTL_EVENTS, 48))``
        Energy event counters (docs/energy.md, "RTL counters"; `systolic.hdl.event_counters`),
        one per name of `RTL_EVENTS` (`events__macs`, ...), cleared by `start`, counting while
        `busy`; equal to `systolic.sim.energy.events.program_events` summed.
    trace : ``Out(trace_signature())``
        Strobes {valid, tag}: `accept` (a command is accepted; tag = its table entry, 0 for
        HALT), `issue[u]` and `complete[u]` (unit u starts / finishes the instruction `tag`).

    Timing: cycle 0 is the `start` cycle; the first command is accepted in cycle 1 at the
    earliest; a HALT accepted in cycle h makes `busy` fall and `done` rise in cycle h + 1, when
    `cycles` reads h. Each unit's own timing is in `systolic.sim.timing` (load_timing,
    execute_timing, store_timing) and the dispatcher's in `dispatch_model`.

    Backpressure and combinational paths: `i_instr.ready` depends on `i_instr.payload.unit`
    and registers (busy, the dispatcher's table and queues); `o_mem_req.ready` low holds LD,
    `o_mem_write.ready` low holds ST (results stay exact, only later); `i_mem_resp` is never
    back-pressured. The counters and the trace are observation only.
    """

    def __init__(self, config: ArrayConfig) -> None:
        if not isinstance(config, ArrayConfig):
            self._MustUse__silence = True  # rejected, not unused
            raise TypeError(f"config must be an ArrayConfig, not {config!r}")
        self.config = config
        bus = config.bus_bytes
        super().__init__({
            "start": In(1),
            "busy": Out(1),
            "done": Out(1),
            "i_instr": In(stream.Signature(command_layout())),
            "o_mem_req": Out(stream.Signature(data.StructLayout({"addr": 32}))),
            "i_mem_resp": In(stream.Signature(data.StructLayout({"data": 8 * bus}))),
            "o_mem_write": Out(stream.Signature(write_beat_layout(bus))),
            "cycles": Out(COUNTER_WIDTH),
            "instructions": Out(COUNTER_WIDTH),
            "dispatch_stall": Out(COUNTER_WIDTH),
            "unit_busy": Out(COUNTER_WIDTH).array(UNITS),
            "hazard_stall": Out(COUNTER_WIDTH).array(UNITS),
            "trace": Out(trace_signature()),
            "events": Out(events_signature(RTL_EVENTS, EVENT_WIDTH)),
        })

    def _memories(self, m: Module, ld: LoadUnit, ex: ExecuteUnit, st: StoreUnit) -> None:
        """Instantiate spad_in, spad_wt and params and join each port to its one owner."""
        cfg = self.config
        specs = (
            ("spad_in", spad_row_layout(cfg.input_width, cfg.dim), depth(cfg, Memory.SPAD_IN),
             ld.spad_in, (ex.spad_in, st.spad_read)),
            ("spad_wt", spad_row_layout(cfg.weight_width, cfg.dim), depth(cfg, Memory.SPAD_WT),
             ld.spad_wt, (ex.spad_wt,)),
            ("params", params_row_layout(cfg.cols), PARAMS_DEPTH, ld.params, (st.params_read,)),
        )
        for name, layout, rows, writer, readers in specs:
            memory = RamBlock(shape=layout, depth=rows, init=[])
            m.submodules[name] = memory
            write = memory.write_port()
            m.d.comb += [
                write.addr.eq(writer.addr), write.data.eq(writer.data), write.en.eq(writer.en),
            ]
            for reader in readers:
                read = memory.read_port()
                m.d.comb += [
                    read.addr.eq(reader.addr), read.en.eq(reader.en), reader.data.eq(read.data),
                ]

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        m.submodules.dispatcher = disp = Dispatcher(
            units=UNITS, table_entries=TABLE_ENTRIES, queue_depth=QUEUE_DEPTH, ranges=RANGES,
            addr_width=ADDR_WIDTH, onchip_width=onchip_addr_width(cfg),
            payload_shape=INSTRUCTION_BITS)
        m.submodules.load = ld = LoadUnit(cfg, mem_latency=cfg.mem_latency)
        m.submodules.execute = ex = ExecuteUnit(cfg)
        m.submodules.store = st = StoreUnit(cfg)
        m.submodules.acc = acc = Accumulator.from_config(cfg)
        m.submodules.ex_done = merge = CompletionMerge(depth=TABLE_ENTRIES, tag_width=TAG_WIDTH)
        m.submodules.entries = entries = EntryTracker(
            entries=TABLE_ENTRIES, units=UNITS, tag_width=TAG_WIDTH)
        m.submodules.counters = counters = RunCounters(units=UNITS, width=COUNTER_WIDTH)
        self._memories(m, ld, ex, st)

        # Units: issue streams in, completions out (one per unit and cycle).
        units: tuple[Any, ...] = (ld, ex, st)
        for u, unit in enumerate(units):
            issue = disp.o_issue[u]
            m.d.comb += [
                unit.i_instr.valid.eq(issue.valid),
                unit.i_instr.payload.payload.eq(issue.payload.payload),
                unit.i_instr.payload.tag.eq(issue.payload.tag),
                issue.ready.eq(unit.i_instr.ready),
            ]
        m.d.comb += [
            merge.i_first.eq(ex.o_compute_done),
            merge.i_second.eq(ex.o_preload_done),
        ]
        completions = (
            (ld.o_done.valid, ld.o_done.payload.tag),
            (merge.o_done.valid, merge.o_done.tag),
            (st.o_complete.valid, st.o_complete.payload.tag),
        )
        for u, (valid, tag) in enumerate(completions):
            m.d.comb += [
                disp.i_complete[u].valid.eq(valid),
                disp.i_complete[u].payload.eq(tag),
                entries.i_complete[u].valid.eq(valid),
                entries.i_complete[u].tag.eq(tag),
                self.trace.complete[u].valid.eq(valid),
                self.trace.complete[u].tag.eq(tag),
            ]

        # Datapaths between units and the outside.
        wiring.connect(m, ex.o_acc, acc.i_write)
        wiring.connect(m, st.acc_read, acc.read)
        m.d.comb += [
            self.o_mem_req.valid.eq(ld.o_req.valid),
            self.o_mem_req.payload.eq(ld.o_req.payload),
            ld.o_req.ready.eq(self.o_mem_req.ready),
            ld.i_resp.valid.eq(self.i_mem_resp.valid),
            ld.i_resp.payload.eq(self.i_mem_resp.payload),
            self.i_mem_resp.ready.eq(1),
            self.o_mem_write.valid.eq(st.o_write.valid),
            self.o_mem_write.payload.eq(st.o_write.payload),
            st.o_write.ready.eq(self.o_mem_write.ready),
        ]

        # Commands: HALT waits at the port until the table is empty; the rest go to dispatch.
        command = self.i_instr.payload
        busy = Signal()
        done = Signal()
        is_halt = Signal()
        halt_accept = Signal()
        accept = Signal()
        m.d.comb += [
            is_halt.eq(command.unit == HALT_UNIT),
            disp.i_instr.valid.eq(busy & self.i_instr.valid & ~is_halt),
            disp.i_instr.payload.unit.eq(command.unit),
            disp.i_instr.payload.ranges.eq(command.ranges),
            disp.i_instr.payload.payload.eq(command.payload),
            self.i_instr.ready.eq(busy & Mux(is_halt, disp.idle, disp.i_instr.ready)),
            halt_accept.eq(self.i_instr.valid & self.i_instr.ready & is_halt),
            accept.eq(disp.i_instr.valid & disp.i_instr.ready),
            entries.i_accept.eq(accept),
            self.trace.accept.valid.eq(accept | halt_accept),
            self.trace.accept.tag.eq(Mux(is_halt, 0, entries.o_alloc)),
            self.busy.eq(busy),
            self.done.eq(done),
        ]
        start = Signal()
        m.d.comb += start.eq(self.start & ~busy)
        with m.If(start):
            m.d.sync += [busy.eq(1), done.eq(0)]
        with m.Elif(halt_accept):
            m.d.sync += [busy.eq(0), done.eq(1)]

        # Per-unit occupancy for the counters: queued (accepted, not issued) and in progress.
        retired = [valid for valid, _ in completions]
        for u, unit in enumerate(units):
            issue = disp.o_issue[u]
            issued = Signal(name=f"issued{u}")
            queued = Signal(range(QUEUE_DEPTH + 1), name=f"queued{u}")
            active = Signal(range(TABLE_ENTRIES + 1), name=f"active{u}")
            active_next = Signal.like(active, name=f"active_next{u}")
            m.d.comb += [
                issued.eq(issue.valid & issue.ready),
                self.trace.issue[u].valid.eq(issued),
                self.trace.issue[u].tag.eq(issue.payload.tag),
                active_next.eq(active + issued - retired[u]),
                # active_next != 0 with the late `issued` as the last choice, after
                # comparisons of the `active` register (not after active_next's adder)
                counters.i_unit_busy[u].eq(Mux(
                    issued, (active != 0) | ~retired[u], (active != 0) & ~(retired[u] & (active == 1)))),
                counters.i_hazard_stall[u].eq((queued != 0) & ~issue.valid & unit.i_instr.ready),
            ]
            m.d.sync += [
                queued.eq(queued + (accept & (command.unit == u)) - issued),
                active.eq(active_next),
            ]
        m.d.comb += [
            counters.i_clear.eq(start),
            counters.i_enable.eq(busy),
            counters.i_retired.eq(sum(retired) + halt_accept),
            counters.i_dispatch_stall.eq(
                busy & self.i_instr.valid & ~is_halt & ~disp.i_instr.ready),
            self.cycles.eq(counters.cycles),
            self.instructions.eq(counters.instructions),
            self.dispatch_stall.eq(counters.dispatch_stall),
        ]
        for u in range(UNITS):
            m.d.comb += [
                self.unit_busy[u].eq(counters.unit_busy[u]),
                self.hazard_stall[u].eq(counters.hazard_stall[u]),
            ]
        self._event_counters(m, start, busy, ld, ex, st)
        return m

    def _event_counters(self, m: Module, start: Signal, busy: Signal, ld: LoadUnit,
                        ex: ExecuteUnit, st: StoreUnit) -> None:
        """Count the energy events of docs/energy.md ("RTL counters") from the units' strobes."""
        cfg = self.config
        m.submodules.events = bank = EventCounters(event_increments(cfg), width=EVENT_WIDTH)
        inc = bank.i_inc
        write = self.o_mem_write
        acc_write = ex.o_acc
        st_accept = st.i_instr.valid & st.i_instr.ready
        taken = write.valid & write.ready
        m.d.comb += [
            bank.i_clear.eq(start),
            bank.i_enable.eq(busy),
            inc.mac_slots.eq(Mux(ex.o_events.beat, cfg.pes, 0)),
            inc.macs.eq(ex.o_events.macs),
            inc.spad_in_reads.eq(ex.o_events.spad_in_read + st.spad_read.en),
            inc.spad_wt_reads.eq(ex.o_events.spad_wt_read),
            inc.spad_in_writes.eq(ld.spad_in.en),
            inc.spad_wt_writes.eq(ld.spad_wt.en),
            inc.params_writes.eq(ld.params.en),
            # the STORE unit reads a params row for every instruction it takes: only a STORE's
            inc.params_reads.eq(st_accept & (st.i_instr.payload.payload[:8] == Store.OPCODE)),
            inc.acc_reads.eq(st.acc_read.req.valid & st.acc_read.req.ready),
            inc.acc_writes.eq(acc_write.valid & acc_write.ready),
            inc.acc_rmw.eq(acc_write.valid & acc_write.ready & acc_write.payload.accumulate),
            inc.ext_read_beats.eq(self.o_mem_req.valid & self.o_mem_req.ready),
            inc.ext_read_bytes.eq(ld.o_read_bytes),
            inc.ext_write_beats.eq(taken),
            inc.ext_write_bytes.eq(Mux(taken, sum(write.payload.strobe), 0)),
        ]
        for name in store_events_layout(cfg).members:  # the STORE unit's lane events
            m.d.comb += getattr(inc, name).eq(getattr(st.o_events, name))
        for name in RTL_EVENTS:
            m.d.comb += getattr(self.events, name).eq(getattr(bank.counts, name))
