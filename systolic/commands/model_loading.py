"""Loading the user's model for a command: the MODEL / --input / --seed arguments of the
commands that run a model (`add_model_arguments`), the `--max-memory` option every command
that reads a model has, and one place that turns importer warnings into the command line's
one-line `systolic: warning: ...` messages."""

import argparse
import contextlib
import os
import re
import sys
import warnings
from typing import TYPE_CHECKING

from systolic.errors import ConfigError

if TYPE_CHECKING:  # the importer (numpy, protobuf) loads only when a command reads a model
    from systolic.ir import Model

__all__ = [
    "add_max_memory_argument",
    "add_model_arguments",
    "command_budget",
    "load_user_model",
    "parse_size",
    "seed_value",
]

INPUT_HELP = (".npy (one-input models) or .npz (one array per input name); default: a seeded "
              "random input")  # fmt: skip
SEED_HELP = "seed of the random input, a whole number >= 0 (default 0)"

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1 << 30,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1 << 40,
}


def parse_size(text: str) -> int:
    """Return a size in bytes from "4096", "512MiB", "8GiB", "1.5GB" (decimal and binary)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        raise ConfigError(
            f"--max-memory {text!r} is not a size: write bytes or a number with a unit such as "
            "512MiB, 8GiB or 2GB"
        )
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size <= 0:
        raise ConfigError(f"--max-memory {text!r} must be larger than zero")
    return size


def seed_value(text: str) -> int:
    """Parse `--seed`: a whole number >= 0 (numpy's generators refuse negative seeds)."""
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return value


def add_model_arguments(
    parser: argparse.ArgumentParser, *, input_help: str = INPUT_HELP, seed_help: str = SEED_HELP
) -> None:
    """Add `MODEL` (optional: the bundled example), `--input FILE` and `--seed N` (a
    `seed_value`, default 0), the arguments of a command that runs a model on inputs."""
    parser.add_argument(
        "model", metavar="MODEL", nargs="?",
        help="the .onnx file (default: the bundled example, a quantized LeNet)",
    )  # fmt: skip
    parser.add_argument("--input", metavar="FILE", help=input_help)
    parser.add_argument("--seed", type=seed_value, default=0, metavar="N", help=seed_help)


def add_max_memory_argument(parser: argparse.ArgumentParser) -> None:
    """Add `--max-memory SIZE` (default 8GiB): the most any one tensor, all the model's
    constants together, and the tensors a reference run holds at once may take
    (`command_budget`)."""
    parser.add_argument(
        "--max-memory", metavar="SIZE", default="8GiB",
        help="the most any one tensor, all the model's constants together, and the tensors a "
             "run of the model holds at once may take (default 8GiB); larger models and "
             "--input arrays are refused",
    )  # fmt: skip


def command_budget(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """Return the memory budget `--max-memory` sets for the whole command: every run of the
    reference executor inside it (the passes' calibration, reference values) holds at most that
    many bytes at once (`systolic.reference.executor.memory_budget`). A command without the
    option keeps the executor's default."""
    text = getattr(args, "max_memory", None)
    if text is None:
        return contextlib.nullcontext()
    from systolic.reference.executor import memory_budget  # (numpy loads only when needed)

    return memory_budget(parse_size(text))


def load_user_model(
    path: str | os.PathLike[str] | None, *, max_tensor_bytes: int | None = None
) -> "Model":
    """Load `path` (None: the bundled example) with `systolic.mapper.importer.load_model`;
    name warnings are printed to standard error as one line each, other warnings pass on."""
    from systolic.examples import example_path
    from systolic.mapper.graph_checks import NameWarning
    from systolic.mapper.importer import load_model

    source = path if path is not None else example_path()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NameWarning)
        if max_tensor_bytes is None:
            model = load_model(source)
        else:
            model = load_model(source, max_tensor_bytes=max_tensor_bytes)
    report_warnings(caught)
    return model


def report_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Print the importer's NameWarnings as `systolic: warning: ...` lines; re-issue the
    other warnings caught while loading."""
    from systolic.mapper.graph_checks import NameWarning  # (the importer loads on first use)

    for warning in caught:
        if issubclass(warning.category, NameWarning):
            print(f"systolic: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
