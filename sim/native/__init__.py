"""Native (C) engines of the `model` backend, compiled on first use and loaded with ctypes.

- `build`: compiling `<name>.c` of this folder once per source, compiler and CPU (cached on
  disk), with the generated instruction-field header (`isa_header`).
- `isa_header`: the C header of the instruction encoding, generated from `systolic.isa`.

The Python implementations (`systolic.sim.golden.machine`, `systolic.sim.timing`) are the
specification and the fallback: without a C compiler, or with `SYSTOLIC_NATIVE=0`, the model
backend runs them instead (slower, same results).
"""
