"""What the passes did to each node of the original model: fused, folded, removed, or left
to the host with a reason. Passes record into one `PassReport`; the pipeline finishes it."""

import dataclasses
from collections.abc import Iterable

__all__ = ["NodeFate", "PassReport"]

FUSED = "fused"
FOLDED = "folded"
REMOVED = "removed"
HOST = "host"
LAYOUT = "layout"


@dataclasses.dataclass(frozen=True)
class NodeFate:
    """One original node's outcome.

    `action` is "fused" (part of the systolic op `into`), "folded" (evaluated to a constant),
    "removed" (no effect on the outputs: Identity, Dropout, dead code), "layout" (kept as an
    integer layout op the lowering handles) or "host" (kept as a standard op; `reason` says
    why)."""

    node: str
    op_type: str
    action: str
    into: str = ""
    reason: str = ""

    def text(self) -> str:
        detail = f" into {self.into}" if self.into else ""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.node} ({self.op_type}): {self.action}{detail}{why}"


DYNAMIC_SCALING = "dynamic quantization's run-time scaling"
"""How the host reasons of a dynamic product's own dequantization begin (the scales' product,
the zero point's correction, the Cast and the scaling of the int32 result): with the
activation scale computed on the host (the stated design), these are number-format
conversions of the dynamic quantization, which `systolic.simulation.coverage` counts as such,
not as element-wise work."""


class PassReport:
    """Per original node, the first definite outcome recorded, plus notes explaining why a
    pattern did not apply (used as the reason when the node ends up on the host)."""

    def __init__(self, original: Iterable[tuple[str, str]] = ()) -> None:
        self._op_types: dict[str, str] = dict(original)
        self._fates: dict[str, NodeFate] = {}
        self._notes: dict[str, str] = {}
        self._created: dict[str, str] = {}

    def tracks(self, label: str) -> bool:
        """True when `label` names a node of the original model."""
        return label in self._op_types

    def record(self, label: str, action: str, *, into: str = "", reason: str = "") -> None:
        """Record an outcome for an original node (the first one recorded wins)."""
        if label in self._op_types and label not in self._fates:
            self._fates[label] = NodeFate(label, self._op_types[label], action, into, reason)

    def fused(self, labels: Iterable[str], into: str) -> None:
        for label in labels:
            self.record(label, FUSED, into=into)

    def redirect(self, into: str, new_into: str) -> None:
        """Make every node fused `into` one op fused into `new_into` instead (a later pass
        merged that op into another)."""
        for label, fate in self._fates.items():
            if fate.action == FUSED and fate.into == into:
                self._fates[label] = dataclasses.replace(fate, into=new_into)

    def note(self, label: str, reason: str) -> None:
        """Remember why a pattern rooted at `label` was not fused (the latest note wins)."""
        if label in self._op_types:
            self._notes[label] = reason

    def note_of(self, label: str) -> str | None:
        return self._notes.get(label)

    def created(self, name: str, host_reason: str) -> None:
        """Remember why node `name`, which a pass created (not an original node), runs on
        the host."""
        self._created[name] = host_reason

    def created_reason(self, name: str) -> str | None:
        return self._created.get(name)

    def fate(self, label: str) -> NodeFate | None:
        return self._fates.get(label)

    @property
    def fates(self) -> tuple[NodeFate, ...]:
        """The outcomes, in the original model's node order."""
        return tuple(self._fates[label] for label in self._op_types if label in self._fates)

    def counts(self) -> dict[str, int]:
        """How many original nodes ended in each action."""
        totals: dict[str, int] = {}
        for fate in self.fates:
            totals[fate.action] = totals.get(fate.action, 0) + 1
        return totals

    def text(self) -> str:
        return "\n".join(fate.text() for fate in self.fates)
