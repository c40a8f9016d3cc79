"""The golden machine: what every instruction does to the architectural state, bit for bit.

`machine` is the readable specification (`Machine.execute`, one instruction at a time;
`Machine.run` and `run_program`, whole programs in program order), with `external` for its
accesses to external memory. `native_machine` drives the C engine that runs whole programs
at native speed and is tested equal to `Machine.execute`, state for state.
"""
