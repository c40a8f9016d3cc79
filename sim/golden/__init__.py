"""Golden models of the hardware blocks: numpy code computing bit for bit what a block computes.

Each module models one hardware stage and is the oracle its Amaranth implementation is tested
against (`requant`: the output stage, `systolic.hdl.output_stage`).
"""
