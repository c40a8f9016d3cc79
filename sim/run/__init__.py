"""Running a program on a simulation backend: `run_program` and its `RunResult`."""
