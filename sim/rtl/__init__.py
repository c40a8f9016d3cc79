"""Driving the accelerator's RTL: command encoding, an external memory model, the pysim driver."""
