"""Graph passes that rewrite an imported model into the integer graph of the accelerator.

The ordered pipeline is `pipeline.run_passes`; each pass is one module with one job.
"""
