"""Energy per layer from event counts (docs/energy.md).

`events`: the events that cost energy, per instruction and per program, counted from the
instruction's fields and the configuration exactly as the RTL performs them; `table`: the
per-action energies (a default 45 nm table shipped as TOML, or the user's); `energy`: counts
times per-action energies, by component.
"""
