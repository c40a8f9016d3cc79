"""`systolic simulate`: run a model on the virtual accelerator and check it.

`run.simulate_model` does the work: `inputs` reads or makes the model inputs, `bitexact`
compares every accelerator-computed tensor with the reference executor, `layer_timing` turns
per-instruction times into per-layer cycles and stalls, `onnxruntime_check` compares with
onnxruntime, `quantization` with the float model, `report` builds the per-layer table and the
JSON document, `outputs` writes the files (all or none), `progress` draws the progress bar.
"""
