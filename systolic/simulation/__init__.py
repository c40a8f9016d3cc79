"""`systolic simulate`: run a model on the virtual accelerator and check it.

`run.simulate_model` composes the work: `prepare` loads the model and its inputs (`inputs`
reads or makes them) and runs the mapper passes; `runner` is the one loop that runs a compiled
model step by step (accelerator runs on a backend, host steps with `host_step` on the
reference), used by `compare` and the tests too; `layer_check` compares every layer with the
reference executor as the runs finish (`bitexact` names the first differing element and its
tile); `layer_timing` turns per-instruction times into per-layer cycles and stalls and
`layer_rows` into the per-layer rows `simulate` and `compare` report; `engine` names the engine
of the `model` backend; `onnxruntime_check`, `onnxruntime_explain`, `onnxruntime_saturation`
and `saturating_layers` compare with onnxruntime and explain a difference, `quantization`
compares with the float model; `report` builds the per-layer table and the JSON document,
`outputs` writes the files (all or none), `progress` draws the progress bar.
"""
