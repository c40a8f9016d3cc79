"""Loop: run a body graph while a trip count and a condition allow, carrying values.

The node's own inputs are `M` (int64 trip count, optional), `cond` (bool, optional) and the N
initial values of the loop-carried dependencies, followed by its captures (`Node.captures`: the
outer values the body reads by name). The body takes (iteration number, condition, N carried
values) and gives (condition, N carried values, K scan outputs). The loop runs
`for (i = 0; i < M && cond; ++i)`: the cond input is tested before the first iteration; with
no cond input the body's condition output is ignored; with neither input the loop never ends
and is refused. The node's outputs are the N final carried values and the K scan outputs,
each the body's per-iteration values stacked on a new first axis.

Inference: carried outputs keep the initial values' types when the body gives them back
unchanged; scan outputs get [trip count, ...] when M is a known constant and cond is absent or
a constant true that the body passes through unchanged. Otherwise their sizes are known only
when running (`ShapeKnownWhenRunning`: the declared types stand). Running is on the host.
"""

from collections.abc import Sequence

import numpy as np

from systolic.ir import Attrs, DataType, TensorType
from systolic.reference.ops._body_op import BodyOp
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

__all__ = ["OPS", "Loop", "scalar_for"]


def scalar_for(value: np.ndarray, declared: TensorType | None) -> np.ndarray:
    """Return the scalar `value` shaped as a body input declares it ([] or [1])."""
    rank = 0 if declared is None or declared.shape is None else len(declared.shape)
    return value.reshape((1,) * rank)


class Loop(BodyOp):
    """Loop-1, -11 (cond and M may both be omitted from the inputs' minimum), -13, -16, -19,
    -21, -23 (later versions widen the carried types to sequences and optionals, which the
    reference does not hold: tensors only)."""

    op_type = "Loop"
    since_versions = (1, 11, 13, 16, 19, 21, 23)

    def __init__(self, attrs: Attrs, version: int, node_label: str) -> None:
        super().__init__(attrs, version, node_label)
        body = self.body
        if len(body.inputs) < 2 or not body.outputs:
            raise self.error(f"the body takes {len(body.inputs)} inputs and gives "
                             f"{len(body.outputs)} outputs; it must take the iteration number "
                             "and the condition, and give the condition first")
        self.carried = len(body.inputs) - 2
        self.scans = len(body.outputs) - 1 - self.carried
        if self.scans < 0:
            raise self.error(f"the body carries {self.carried} values in but gives "
                             f"{len(body.outputs) - 1} back after the condition")

    def _split(self, values: Sequence[object]) -> tuple[list[object], dict[str, object]]:
        """Return the own inputs (M, cond, carried) and the captures bound to their names."""
        own = len(values) - len(self.captures)
        if own != 2 + self.carried:
            raise self.error(f"has {own} inputs besides the {len(self.captures)} outer values "
                             f"the body reads; expected M, cond and {self.carried} carried")
        if self.num_outputs is not None and self.num_outputs > self.carried + self.scans:
            raise self.error(f"names {self.num_outputs} outputs; the body gives "
                             f"{self.carried} carried values and {self.scans} scan outputs")
        return list(values[:own]), dict(zip(self.captures, values[own:], strict=True))

    def infer(self, inputs: Sequence[TensorInfo | None]) -> list[TensorInfo]:
        own, captured = self._split(inputs)
        trip, cond = own[0], own[1]
        for name, info, dtype in (("M", trip, DataType.INT64), ("cond", cond, DataType.BOOL)):
            if isinstance(info, TensorInfo) and (info.size != 1 or info.dtype != dtype):
                raise self.error(f"{name} must be one {dtype.short}, got "
                                 f"{info.dtype.short}{list(info.shape)}")
        carried = [info for info in own[2:] if isinstance(info, TensorInfo)]
        scope = {name: info for name, info in captured.items() if isinstance(info, TensorInfo)}
        names = [info.name for info in self.body.inputs]
        scope[names[0]] = TensorInfo(DataType.INT64, ())
        entering = cond.value if isinstance(cond, TensorInfo) else None  # passed through: known
        scope[names[1]] = TensorInfo(DataType.BOOL, (), entering)
        scope.update((name, TensorInfo(info.dtype, info.shape))
                      for name, info in zip(names[2:], carried, strict=True))
        results = self.infer_body(scope)
        self.check_carried(carried, results[1:], "carried value")
        count = self._static_trips(trip, cond, results[0])
        scans = [TensorInfo(info.dtype, (count, *info.shape))
                 for info in results[1 + self.carried:]]
        finals = [TensorInfo(info.dtype, info.shape) for info in carried]
        return finals + scans

    def _static_trips(self, trip: object, cond: object, body_cond: TensorInfo) -> int:
        """Return the iteration count when known before running, else raise
        ShapeKnownWhenRunning (the scan outputs' first size is only known then)."""
        if not self.scans:
            return 0
        known_trip = isinstance(trip, TensorInfo) and trip.value is not None
        cond_true = cond is None or (isinstance(cond, TensorInfo) and cond.value is not None
                                     and bool(cond.value.reshape(-1)[0]))
        body_true = cond is None or (body_cond.value is not None
                                     and bool(body_cond.value.reshape(-1)[0]))
        if known_trip and cond_true and body_true:
            assert isinstance(trip, TensorInfo) and trip.value is not None
            return max(0, int(trip.value.reshape(-1)[0]))
        raise ShapeKnownWhenRunning(self.error("the trip count is known only when running, "
                                               "and with it the scan outputs' size").args[0])

    def run(self, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        own, captured = self._split(inputs)
        trip, cond = own[0], own[1]
        if trip is None and cond is None:
            raise self.error("has neither a trip count M nor a condition: it never ends")
        limit = None if trip is None else int(np.asarray(trip).reshape(-1)[0])
        going = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
        carried = [value for value in own[2:] if isinstance(value, np.ndarray)]
        scope = {k: v for k, v in captured.items() if isinstance(v, np.ndarray)}
        collected: list[list[np.ndarray]] = [[] for _ in range(self.scans)]
        count = 0
        while going and (limit is None or count < limit):
            outputs = self._iterate(count, going, carried, scope)
            if cond is not None:
                going = bool(outputs[0].reshape(-1)[0])
            carried = outputs[1:1 + self.carried]
            for store, value in zip(collected, outputs[1 + self.carried:], strict=True):
                store.append(value)
            count += 1
        scans = [self._stack(index, store) for index, store in enumerate(collected)]
        return carried + scans

    def _iterate(self, count: int, going: bool, carried: list[np.ndarray],
                 scope: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Run the body once and return its outputs in order."""
        iteration, condition, *rest = self.body.inputs
        feeds = {iteration.name: scalar_for(np.array(count, np.int64), iteration.type),
                 condition.name: scalar_for(np.array(going), condition.type)}
        feeds.update((info.name, value) for info, value in zip(rest, carried, strict=True))
        return self.run_body(feeds, scope)

    def _stack(self, index: int, store: list[np.ndarray]) -> np.ndarray:
        """Stack one scan output's per-iteration values (none: an empty [0] tensor)."""
        if store:
            if len({value.shape for value in store}) > 1:
                raise self.error(f"scan output {index} changes shape between iterations "
                                 f"({sorted({value.shape for value in store})})")
            return np.stack(store)
        declared = self.body.outputs[1 + self.carried + index].type
        dtype = declared.dtype.numpy if declared and declared.dtype.has_numpy else np.float32
        return np.empty((0,), dtype)


OPS = (Loop,)
