"""The native (C) engine of the `model` backend: one library built at install time.

- `engine.c`, `golden.c`, `timing.c`, `facts.c` and their one header `isa.h`: compiled by
  setup.py into the extension module `systolic.sim.native._engine` (optional: an install
  without a C compiler has none);
- `build`: loading it with ctypes, checked against its sources (`native_status`,
  `load_library`);
- `isa_header`: generates `isa.h` (instruction fields, row patterns and extents) from
  `systolic.isa`; `sources`: the source list and digest setup.py and `build` share.

The Python implementations (`systolic.sim.golden.machine`, `systolic.sim.timing`) are the
specification and the fallback: without the engine, or with `SYSTOLIC_NATIVE=0`, the model
backend runs them instead (slower, same results).
"""
