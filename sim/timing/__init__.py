"""Timing models: cycle-exact Python models of the hardware's scheduling, equal to the RTL.

`dispatch_model` models the dispatcher and its units (docs/hardware.md, "Dispatcher").
"""
