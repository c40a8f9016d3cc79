"""Timing models: cycle-exact Python models of the hardware's scheduling, equal to the RTL.

`dispatch_model` models the dispatcher and its units (docs/hardware.md, "Dispatcher");
`load_timing`, `execute_timing` and `store_timing` time the units; `completion_merge` merges
the EXECUTE unit's completions; `program_model` composes them into the whole accelerator's
per-instruction cycles (the "model" simulation backend), from the static facts of
`program_facts`, with `native_pass` as its port to C and `program_timing` as its result.
"""
