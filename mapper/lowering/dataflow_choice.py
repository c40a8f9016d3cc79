"""Per-layer dataflow for an array that runs both (`Dataflow.BOTH`).

`DataflowChooser(config, layer_cycles)` serves one compilation. Its `lower(name, lower, plan)`
lowers one array layer: for a WS or OS configuration it is `lower(config)`. For `Dataflow.BOTH`
it lowers the layer twice, as the weight-stationary and as the output-stationary array of the
same size and memories would (`lower(variant)`, each placing its constants from the same free
address of the memory plan, which then moves past the larger of the two: only the kept one's
bytes enter the image), keeps both and returns the weight-stationary instructions as the
layer's placeholder, without constants.

`refine(name, change)` rewrites both lowerings of a layer (compile_model interleaves the
vector layer that follows it into each: `vector_overlap`), so that the choice times the
code that will run. `settle(layers, instructions, segments)` then chooses, once every layer is compiled, in
program order. For each array layer it times, with `layer_cycles(program, config)` (the cycle
model on the BOTH array: `systolic.sim.timing.layer_cycles.layer_cycles`, injected by the
caller because the mapper sits below the simulators), the program made of the layers since
the previous array layer (as chosen), the layer in either dataflow, the layers up to the next
array layer and that one in either dataflow: four programs. It keeps the dataflow of the
fastest of them (on a tie weight-stationary, the default): the choice sees the overlap with
the layer before, the drain of the array when the dataflow changes, and what the layer's
order of results does to the vector layers that read them and to the next array layer. It
returns the instructions and layers with the chosen code and adds the chosen constants to
`segments`.

A variant the lowering refuses (UnsupportedError, ResourceError) leaves the other; when both
refuse, the weight-stationary refusal is raised. Inside `jobs.planning_only()` (no
instructions) only the weight-stationary lowering runs, unless it refuses. Lowering a BOTH
layer without `layer_cycles` raises ConfigError.
"""

import dataclasses
from collections.abc import Callable, Sequence

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ConfigError, ResourceError, UnsupportedError
from systolic.isa.instructions import Instruction
from systolic.isa.program import MemorySegment, ProgramLayer
from systolic.mapper.lowering.layer_code import LayerCode
from systolic.mapper.lowering.memory_plan import MemoryPlan

__all__ = ["DataflowChooser", "LayerCycles"]

LayerCycles = Callable[[Sequence[Instruction], ArrayConfig], int]
"""The cycles of a program made of some layers' instructions (HALT added) on a configuration."""

_FAMILIES = (Dataflow.WS, Dataflow.OS)  # (the order is the tie rule)


class DataflowChooser:
    """The per-layer choice of one compilation (module docstring)."""

    def __init__(self, config: ArrayConfig, layer_cycles: LayerCycles | None = None) -> None:
        self.config = config
        self.layer_cycles = layer_cycles
        self.candidates: dict[str, tuple[LayerCode, ...]] = {}  # layer name -> WS, OS

    def lower(self, name: str, lower: Callable[[ArrayConfig], LayerCode],
              plan: MemoryPlan) -> LayerCode:
        """Return layer `name` lowered for the configuration (module docstring); `lower`
        places its constants in `plan`."""
        if self.config.dataflow is not Dataflow.BOTH:
            return lower(self.config)
        codes: list[LayerCode] = []
        refusal: UnsupportedError | ResourceError | None = None
        start = end = plan.next_free
        for dataflow in _FAMILIES:
            plan.next_free = start
            try:
                code = lower(dataclasses.replace(self.config, dataflow=dataflow))
            except (UnsupportedError, ResourceError) as err:
                refusal = refusal or err
                continue
            if not code.instructions:  # planning only: nothing to choose between
                return code
            if self.layer_cycles is None:
                raise ConfigError(
                    "dataflow both chooses each layer's dataflow with the cycle model: "
                    "compile with layer_cycles=systolic.sim.timing.layer_cycles.layer_cycles")
            codes.append(code)
            end = max(end, plan.next_free)
        plan.next_free = end
        if not codes:
            assert refusal is not None
            raise refusal
        self.candidates[name] = tuple(codes)
        return dataclasses.replace(codes[0], segments=())

    def refine(self, name: str, change: Callable[[list[Instruction]], list[Instruction]]
               ) -> bool:
        """Replace the instructions of each lowering kept for layer `name` by `change(them)`
        (the vector layer interleaved into it: the choice then times what will run); return
        False, changing nothing, when the layer has no lowerings kept (no choice to make)."""
        codes = self.candidates.get(name)
        if codes is None:
            return False
        self.candidates[name] = tuple(
            dataclasses.replace(code, instructions=tuple(change(list(code.instructions))))
            for code in codes)
        return True

    def settle(self, layers: Sequence[ProgramLayer], instructions: Sequence[Instruction],
               segments: list[MemorySegment]
               ) -> tuple[list[Instruction], list[ProgramLayer]]:
        """Choose every array layer's lowering; return the program's instructions and layers
        (module docstring), the chosen constants added to `segments`."""
        if not self.candidates:
            return list(instructions), list(layers)
        layer_cycles = self.layer_cycles
        assert layer_cycles is not None  # (checked when the candidates were made)
        options = [[list(code.instructions) for code in self.candidates[layer.name]]
                   if layer.name in self.candidates
                   else [list(instructions[layer.first:layer.first + layer.count])]
                   for layer in layers]  # fmt: skip
        chosen = [0] * len(layers)
        choices = [i for i, layer in enumerate(layers) if layer.name in self.candidates]
        for position, index in enumerate(choices):
            start = choices[position - 1] if position else 0
            after = choices[position + 1] if position + 1 < len(choices) else None
            before = [i for k in range(start, index) for i in options[k][chosen[k]]]
            between = [i for k in range(index + 1, len(layers) if after is None else after)
                       for i in options[k][0]]
            nexts = options[after] if after is not None else [[]]
            timed = [(layer_cycles([*before, *mine, *between, *following], self.config),
                      family, following_family)
                     for family, mine in enumerate(options[index])
                     for following_family, following in enumerate(nexts)]
            chosen[index] = min(timed)[1]
        out: list[Instruction] = []
        settled = []
        for layer, layer_options, family in zip(layers, options, chosen, strict=True):
            settled.append(dataclasses.replace(layer, first=len(out),
                                               count=len(layer_options[family])))
            out += layer_options[family]
            if layer.name in self.candidates:
                segments.extend(self.candidates[layer.name][family].segments)
        return out, settled
