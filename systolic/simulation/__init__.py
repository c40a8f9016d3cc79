"""`systolic simulate`: run a model on the virtual accelerator and check it.

`inputs` reads or makes the model inputs, `onnxruntime_check` compares with onnxruntime,
`report` builds the per-layer table and the JSON document, `outputs` writes the results.
"""
