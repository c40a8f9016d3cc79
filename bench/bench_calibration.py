"""PTQ calibration speed (not a test): the mapper's calibration of a float model against
onnxruntime running the same calibration batch.

Loads the onnx wheel's light VGG-19 (or `--model`), draws the passes' calibration set
(`calibration.random_calibration(graph, seed=0)`: 8 seeded standard-normal inputs), and
prints, each the smallest CPU and wall seconds of `--repeat` runs:

- `calibrate`: the reference executor over the 8 feeds, observing every node output's range
  (what `quantize_float` runs, on the model as the passes hand it over: identities removed,
  constants and batch normalisations folded, its repeated-value constants filled in as
  `calibrate` fills them: the light models' ConstantOfShape weights, `constant_layout`);
- onnxruntime: one `InferenceSession.run` per feed (session built once, outside the timing;
  `--ort-threads` intra-op threads, default 1: the reference runs BLAS on one thread);
- their ratio (issue 14's target: within 3x), and with `--profile` the reference run's
  `--top` entries by own time.

    python bench/bench_calibration.py [--model light_vgg19.onnx] [--repeat 2] [--profile]
"""

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

from systolic.mapper.importer import load_model
from systolic.mapper.passes.calibration import calibrate, random_calibration
from systolic.mapper.passes.constant_layout import filled
from systolic.mapper.passes.fold_batchnorm import fold_batchnorm
from systolic.mapper.passes.fold_constants import fold_constants
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import finalize
from systolic.mapper.passes.remove_identities import remove_identities
from systolic.mapper.passes.report import PassReport

LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"


def _best(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Return the smallest (CPU, wall) seconds of `repeat` calls of `run`."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main() -> None:
    """Time both calibrations and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(LIGHT / "light_vgg19.onnx"))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--ort-threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()

    model = name_nodes(load_model(args.model))
    report = PassReport((node.name, node.op_id) for node in model.graph.nodes)
    folded = finalize(fold_constants(remove_identities(model, report), report))
    folded = filled(finalize(fold_batchnorm(folded, report)))  # (outside the timing)
    feeds = random_calibration(folded.graph, seed=0)
    names = [out for node in folded.graph.nodes for out in node.outputs if out]

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.ort_threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(args.model, options,
                                           providers=["CPUExecutionProvider"])  # fmt: skip
    wanted = {i.name for i in session.get_inputs()}

    def ort() -> None:
        for feed in feeds:
            session.run(None, {k: np.asarray(v) for k, v in feed.items() if k in wanted})

    ours = _best(lambda: calibrate(folded, feeds, names), args.repeat)
    theirs = _best(ort, args.repeat)
    print(f"model: {Path(args.model).name}, {len(feeds)} feeds")
    print(f"calibrate (reference executor): {ours[0]:.2f} s CPU, {ours[1]:.2f} s wall")
    print(f"onnxruntime ({args.ort_threads} thread(s)):     "
          f"{theirs[0]:.2f} s CPU, {theirs[1]:.2f} s wall")  # fmt: skip
    print(f"ratio: {ours[0] / theirs[0]:.2f}x CPU, {ours[1] / theirs[1]:.2f}x wall")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(calibrate, folded, feeds, names)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
