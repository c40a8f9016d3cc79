"""Loading the user's model for a command: one place that turns importer warnings into the
command line's one-line `systolic: warning: ...` messages."""

import os
import sys
import warnings

from systolic.mapper.ir import Model

__all__ = ["load_user_model"]


def load_user_model(
    path: str | os.PathLike[str] | None, *, max_tensor_bytes: int | None = None
) -> Model:
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
    for warning in caught:
        if issubclass(warning.category, NameWarning):
            print(f"systolic: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return model
