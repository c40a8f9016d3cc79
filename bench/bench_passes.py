"""Measure the mapper passes' speed and prove that a change leaves their results identical.

Runs `systolic.mapper.passes.pipeline.run_passes` (default calibration: 8 seeded random
inputs for float models) on the light models of the onnx wheel (ResNet-50, VGG-19,
SqueezeNet, DenseNet-121, Inception-v1) and on every model of tests/models, and prints,
per model, the CPU and wall seconds of the passes (loading excluded; with `--repeat K` those
of the run with the least CPU time) and a fingerprint of the
integer graph.

The fingerprint is the SHA-256 of `Model.text()` (every node with its inputs, outputs and
attributes, every value's type, every initializer's type) followed by every initializer's
name, dtype, shape and raw bytes and every tensor-valued attribute's bytes: equal
fingerprints mean the same scales, zero points, multipliers, shifts and weights, bit for bit.

`--save DIR` writes one `<model>.txt` per model (the text form and the per-tensor hashes);
`--check DIR` compares a run with such a baseline and names the first differing line.
`--trace` (float models) adds the calibration's intermediate values to the proof: it runs
the passes up to calibration, then the reference executor on each of the 8 random
calibration inputs, one at a time, and stores the SHA-256 of every node's every output
(`<model>.trace.txt`), so a faster kernel is shown to give bit-identical float values, not
just the same final scales. Usage:

    python bench/bench_passes.py [--only NAME[,NAME...]] [--repeat K] [--trace]
                                 [--save DIR | --check DIR]
"""

import argparse
import hashlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx

from systolic.commands.model_loading import load_user_model
from systolic.ir import Graph, Model, Node, Tensor
from systolic.mapper.passes.calibration import random_calibration
from systolic.mapper.passes.fold_batchnorm import fold_batchnorm
from systolic.mapper.passes.fold_constants import fold_constants
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.pipeline import run_passes
from systolic.mapper.passes.quantize_float import is_quantized
from systolic.mapper.passes.remove_identities import remove_identities
from systolic.mapper.passes.report import PassReport
from systolic.reference.executor import run_model

LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"
LIGHT_MODELS = ("resnet50", "vgg19", "squeezenet", "densenet121", "inception_v1")
MODELS = Path(__file__).resolve().parent.parent / "tests" / "models"


def cases() -> Iterator[tuple[str, Path]]:
    """Yield (label, path) for every benchmarked model."""
    for name in LIGHT_MODELS:
        yield name, LIGHT / f"light_{name}.onnx"
    for path in sorted(MODELS.glob("*.onnx")):
        yield path.stem, path


def _tensor_line(owner: str, tensor: Tensor) -> str:
    data = np.ascontiguousarray(tensor.data)
    digest = hashlib.sha256(data.tobytes()).hexdigest()
    return f"{owner} {tensor.name} {tensor.dtype.name} {list(data.shape)} {digest}"


def _graph_tensor_lines(graph: Graph, prefix: str) -> list[str]:
    lines = [_tensor_line(f"{prefix}init", t) for t in graph.initializers]
    for node in graph.nodes:
        for key, value in node.attrs.items():
            values = value if isinstance(value, tuple) else (value,)
            for item in values:
                if isinstance(item, Tensor):
                    lines.append(_tensor_line(f"{prefix}attr {node.name}.{key}", item))
                elif isinstance(item, Graph):
                    lines += _graph_tensor_lines(item, f"{prefix}{node.name}.{key}/")
    return lines


def fingerprint_lines(model: Model) -> list[str]:
    """Return the text form of `model` and one hash line per constant tensor."""
    return model.text().splitlines() + _graph_tensor_lines(model.graph, "")


def trace_lines(model: Model) -> list[str]:
    """Return one line per calibration sample and node output: the SHA-256 of its bytes
    (empty for a quantized model, which is not calibrated)."""
    model = name_nodes(model)
    report = PassReport((node.name, node.op_id) for node in model.graph.nodes)
    model = fold_batchnorm(fold_constants(remove_identities(model, report), report), report)
    if is_quantized(model):
        return []
    lines: list[str] = []
    for sample, feed in enumerate(random_calibration(model.graph, 0)):
        def record(node: Node, _inputs: object, outputs: list[np.ndarray],
                   sample: int = sample) -> None:
            for name, value in zip(node.outputs, outputs, strict=False):
                data = np.ascontiguousarray(value)
                digest = hashlib.sha256(data.tobytes()).hexdigest()[:24]
                lines.append(f"{sample} {name} {data.dtype} {list(data.shape)} {digest}")
        run_model(model, feed, on_node=record)
    return lines


def compare(label: str, saved: str, lines: list[str]) -> str:
    """Return "" when `lines` equal the saved text, else where they first differ."""
    if saved == "\n".join(lines) + "\n":
        return ""
    old = saved.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(old, lines, strict=False)) if a != b),
                 min(len(old), len(lines)))
    return (f"  {label} DIFFERENT at line {first + 1}:\n    was {old[first:first + 1]}"
            f"\n    now {lines[first:first + 1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated model labels to run")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--save", type=Path, help="write the integer graphs' fingerprints here")
    group.add_argument("--check", type=Path, help="compare with fingerprints saved here")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the passes this many times per model; report the least CPU")
    parser.add_argument("--trace", action="store_true",
                        help="also prove every calibration value bit-identical (slower)")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    failures = 0
    total_cpu = 0.0
    print(f"{'model':<22} {'cpu s':>8} {'wall s':>8}  fingerprint")
    for label, path in cases():
        if only is not None and label not in only:
            continue
        model = load_user_model(path)
        runs = []
        for _ in range(max(1, args.repeat)):
            cpu, wall = time.process_time(), time.perf_counter()
            integer, _report = run_passes(model)
            runs.append((time.process_time() - cpu, time.perf_counter() - wall))
        cpu, wall = min(runs)
        total_cpu += cpu
        lines = fingerprint_lines(integer)
        text = "\n".join(lines) + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        verdict = ""
        if args.save:
            (args.save / f"{label}.txt").write_text(text)
        if args.check:
            verdict = compare("graph", (args.check / f"{label}.txt").read_text(), lines)
        if args.trace:
            trace = trace_lines(model)
            verdict += f"  ({len(trace)} traced values)"
            if args.save:
                (args.save / f"{label}.trace.txt").write_text("\n".join(trace) + "\n")
            if args.check:
                verdict += compare("trace", (args.check / f"{label}.trace.txt").read_text(),
                                   trace)
        if args.check:
            failures += "DIFFERENT" in verdict
            verdict += "" if "DIFFERENT" in verdict else "  identical"
        print(f"{label:<22} {cpu:8.2f} {wall:8.2f}  {digest}{verdict}", flush=True)
    print(f"{'total':<22} {total_cpu:8.2f}")
    if failures:
        print(f"{failures} model(s) differ from the baseline", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
