"""The cycle model's result (`ProgramModel.run`, Python or native pass)."""

import dataclasses

__all__ = ["ProgramTiming"]


@dataclasses.dataclass(frozen=True)
class ProgramTiming:
    """Per instruction (program order, HALT included) the accept, issue and complete cycles."""

    accept: tuple[int, ...]
    issue: tuple[int, ...]
    complete: tuple[int, ...]
    total_cycles: int
    counters: dict[str, int]
    rollbacks: int = 0
    """Returns to a checkpoint the EXECUTE completion merge needed (model cost only)."""
