"""Scan: run a body graph once per slice of its scan inputs, carrying state values.

Scan-9 and later: the node's own inputs are N initial states then M scan inputs (M is the
`num_scan_inputs` attribute), followed by its captures (`Node.captures`). Every scan input is
cut along its `scan_input_axes` entry (default 0; negative from Scan-11) into slices, taken
last-first where `scan_input_directions` says 1; all must have the same length L. The body
takes (N states, M slices) and gives (N states, K slices); the node's outputs are the N final
states and K scan outputs, each the L slices stacked along its `scan_output_axes` entry, in
reverse order where `scan_output_directions` says 1 (prepending).

Scan-8: inputs `sequence_lens` (optional, int64 [batch]) then the states and scan inputs, all
with a batch axis first; the scan axis is 1 and `directions` gives the inputs' directions.
Each batch entry b runs separately over its first sequence_lens[b] slices (default: all);
the scan outputs are padded with zeros to the longest sequence.

Inference gives every output its static type when the body keeps the states' types
(otherwise `ShapeKnownWhenRunning`). Running is on the host.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from systolic.ir import Attrs
from systolic.reference.ops._body_op import BodyOp
from systolic.reference.ops.base import TensorInfo

__all__ = ["OPS", "Scan"]


class Scan(BodyOp):
    """Scan-8 (batched, sequence_lens), -9 (axes and output directions), -11 (negative
    axes), -16, -19, -21, -23 (later versions widen the types)."""

    op_type = "Scan"
    since_versions = (8, 9, 11, 16, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        body = self.body
        scanned = self.required_attr("num_scan_inputs")
        if not isinstance(scanned, int) or not 0 < scanned <= len(body.inputs):
            raise self.error(f"num_scan_inputs is {scanned!r}; it must be between 1 and the "
                             f"body's {len(body.inputs)} inputs")
        self.scanned = scanned
        self.states = len(body.inputs) - scanned
        self.scans = len(body.outputs) - self.states
        if self.scans < 0:
            raise self.error(f"the body takes {self.states} states but gives "
                             f"{len(body.outputs)} outputs")
        batched = version < 9
        self.in_dirs = self._flags("directions" if batched else "scan_input_directions",
                                   scanned)
        self.out_dirs = [0] * self.scans if batched else self._flags(
            "scan_output_directions", self.scans)
        self.in_axes = [0] * scanned if batched else self._ints("scan_input_axes", scanned)
        self.out_axes = [0] * self.scans if batched else self._ints("scan_output_axes",
                                                                    self.scans)

    def _ints(self, name: str, count: int) -> list[int]:
        value = self.attr(name, (0,) * count)
        ints = [v for v in value if isinstance(v, int)] if isinstance(value, tuple) else []
        if not isinstance(value, tuple) or len(ints) != count or len(value) != count:
            raise self.error(f"{name} must list {count} integers, got {value!r}")
        if self.version < 11 and any(v < 0 for v in ints):
            raise self.error(f"{name} {ints} has a negative axis (allowed from Scan-11)")
        return ints

    def _flags(self, name: str, count: int) -> list[int]:
        flags = self._ints(name, count)
        if any(flag not in (0, 1) for flag in flags):
            raise self.error(f"{name} {flags} must hold 0 (forward) or 1 (reverse) only")
        return flags

    def _split(self, values: Sequence[object]
               ) -> tuple[Any, list[Any], list[Any], dict[str, Any]]:
        """Return (sequence_lens or None, states, scan inputs, captures by name)."""
        own = len(values) - len(self.captures)
        lens_input = 1 if self.version < 9 else 0
        if own != lens_input + self.states + self.scanned:
            raise self.error(f"has {own} inputs besides the {len(self.captures)} outer values "
                             f"the body reads; expected {self.states} states and "
                             f"{self.scanned} scan inputs"
                             + (" after sequence_lens" if lens_input else ""))
        lens = values[0] if lens_input else None
        states = list(values[lens_input:lens_input + self.states])
        sequences = list(values[lens_input + self.states:own])
        return lens, states, sequences, dict(zip(self.captures, values[own:], strict=True))

    def _axis(self, axis: int, rank: int, what: str) -> int:
        if not -rank <= axis < rank:
            raise self.error(f"{what} axis {axis} is out of range for rank {rank}")
        return axis % rank

    # -- inference -----------------------------------------------------------------------------

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        _, states, sequences, captured = self._split(inputs)
        if any(not isinstance(info, TensorInfo) for info in states + sequences):
            raise self.error("states and scan inputs may not be omitted")
        batched = self.version < 9
        skip = 1 if batched else 0  # the batch axis of Scan-8
        axes = [skip + self._axis(a, len(info.shape) - skip, "scan input")
                for a, info in zip(self.in_axes, sequences, strict=True)]
        lengths = {info.shape[axis] for info, axis in zip(sequences, axes, strict=True)}
        if len(lengths) != 1:
            raise self.error(f"the scan inputs have different lengths {sorted(lengths)}")
        length = lengths.pop()
        slices = [TensorInfo(info.dtype, info.shape[skip:axis] + info.shape[axis + 1:])
                  for info, axis in zip(sequences, axes, strict=True)]
        starts = [TensorInfo(info.dtype, info.shape[skip:]) for info in states]
        scope = {k: v for k, v in captured.items() if isinstance(v, TensorInfo)}
        scope.update((i.name, v) for i, v in zip(self.body.inputs, starts + slices, strict=True))
        results = self.infer_body(scope)
        self.check_carried(starts, results, "state")
        batch = states[0].shape[:1] if batched and states else sequences[0].shape[:skip]
        outputs = [TensorInfo(s.dtype, batch + s.shape) for s in starts]
        for info, axis in zip(results[self.states:], self.out_axes, strict=True):
            where = self._axis(axis, len(info.shape) + 1, "scan output")
            shape = info.shape[:where] + (length,) + info.shape[where:]
            outputs.append(TensorInfo(info.dtype, batch + shape))
        return outputs

    # -- running -------------------------------------------------------------------------------

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        lens, states, sequences, captured = self._split(inputs)
        scope = {k: v for k, v in captured.items() if isinstance(v, np.ndarray)}
        if self.version >= 9:
            axes = [self._axis(a, x.ndim, "scan input") for a, x in zip(
                self.in_axes, sequences, strict=True)]
            return self._scan(states, sequences, axes, None, scope)
        longest = sequences[0].shape[1]
        batch = sequences[0].shape[0]
        counts = [longest] * batch if lens is None else [int(n) for n in np.ravel(np.asarray(lens))]
        if len(counts) != batch or any(not 0 <= n <= longest for n in counts):
            raise self.error(f"sequence_lens {counts} must give one length in [0, {longest}] "
                             f"per batch entry ({batch})")
        runs = [self._scan([s[b] for s in states], [x[b] for x in sequences],
                           [0] * self.scanned, (counts[b], longest), scope)
                for b in range(batch)]
        return [np.stack([run[i] for run in runs]) for i in range(self.states + self.scans)]

    def _scan(self, states: list[np.ndarray], sequences: list[np.ndarray], axes: list[int],
              padded: tuple[int, int] | None, scope: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the body over the slices; `padded` (Scan-8): (length, padded length)."""
        lengths = {x.shape[axis] for x, axis in zip(sequences, axes, strict=True)}
        if len(lengths) != 1:
            raise self.error(f"the scan inputs have different lengths {sorted(lengths)}")
        length = lengths.pop() if padded is None else padded[0]
        collected: list[list[np.ndarray]] = [[] for _ in range(self.scans)]
        for step in range(length):
            slices = [np.take(x, length - 1 - step if back else step, axis=axis)
                      for x, axis, back in zip(sequences, axes, self.in_dirs, strict=True)]
            feeds = dict(zip((i.name for i in self.body.inputs), states + slices, strict=True))
            outputs = self.run_body(feeds, scope)
            states = outputs[:self.states]
            for store, value in zip(collected, outputs[self.states:], strict=True):
                store.append(value)
        return states + [self._gather(i, store, padded) for i, store in enumerate(collected)]

    def _gather(self, index: int, store: list[np.ndarray],
                padded: tuple[int, int] | None) -> np.ndarray:
        """Stack one scan output's slices along its axis, in its direction."""
        if not store:
            raise self.error("the scan inputs have length 0: the scan outputs' shapes are "
                             "unknown")
        if len({value.shape for value in store}) > 1:
            raise self.error(f"scan output {index} changes shape between iterations")
        stacked = np.stack(store[::-1] if self.out_dirs[index] else store)
        if padded is not None and padded[1] > padded[0]:
            pad = np.zeros((padded[1] - padded[0], *stacked.shape[1:]), stacked.dtype)
            stacked = np.concatenate([stacked, pad])
        axis = self._axis(self.out_axes[index], stacked.ndim, "scan output")
        return np.moveaxis(stacked, 0, axis)


OPS = (Scan,)
