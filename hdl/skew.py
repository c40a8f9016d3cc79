"""Triangular delay lines at the edges of the systolic array.

`Skew` staggers a vector so that element `e` arrives `e` cycles after element 0, the diagonal
wavefront a systolic array needs at its inputs. `Deskew` undoes the stagger of a vector whose
element `e` left the array `e` cycles after element 0: it delays element `e` by `count - 1 - e`
cycles, so all elements of one wavefront leave together.

Both are plain pipelines in the sync domain with no flow control: wrap them in
`EnableInserter` to stall them together with the array.
"""

from amaranth import Cat, Module, Signal, Value
from amaranth.hdl import ShapeCastable
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Deskew", "Skew"]


class _TriangularDelay(wiring.Component):
    def __init__(self, shape: ShapeCastable, count: int) -> None:
        if count < 1:
            self._MustUse__silence = True  # rejected, not unused
            raise ValueError(f"count must be at least 1, not {count}")
        self.shape, self.count = shape, count
        super().__init__({
            "i": In(data.ArrayLayout(shape, count)),
            "o": Out(data.ArrayLayout(shape, count)),
        })

    def delay(self, element: int) -> int:
        """Return the delay, in cycles, of element `element`."""
        raise NotImplementedError

    def elaborate(self, platform: object) -> Module:
        m = Module()
        width = data.ArrayLayout(self.shape, 1).size
        bits = self.i.as_value()
        outputs: list[Value] = []
        for element in range(self.count):
            value: Value = bits[element * width:(element + 1) * width]
            for stage in range(self.delay(element)):
                register = Signal(width, name=f"e{element}_d{stage + 1}")
                m.d.sync += register.eq(value)
                value = register
            outputs.append(value)
        m.d.comb += self.o.as_value().eq(Cat(*outputs))
        return m


class Skew(_TriangularDelay):
    """Delay element `e` of a vector by `e` cycles.

    Parameters
    ----------
    shape:
        Shape of one element (any shape-castable, including layouts).
    count:
        Elements in the vector.

    Members
    -------
    i: In(data.ArrayLayout(shape, count))
        The vector, all elements in the same cycle.
    o: Out(data.ArrayLayout(shape, count))
        Element `e` is `i[e]` from `e` cycles earlier; element 0 is combinational.

    `count * (count - 1) / 2` registers of one element each; no flow control.
    """

    def delay(self, element: int) -> int:
        return element


class Deskew(_TriangularDelay):
    """Delay element `e` of a vector by `count - 1 - e` cycles.

    Parameters
    ----------
    shape:
        Shape of one element (any shape-castable, including layouts).
    count:
        Elements in the vector.

    Members
    -------
    i: In(data.ArrayLayout(shape, count))
        The staggered vector: element `e` arrives `e` cycles after element 0.
    o: Out(data.ArrayLayout(shape, count))
        Element `e` is `i[e]` from `count - 1 - e` cycles earlier, so the elements of one
        wavefront appear together, `count - 1` cycles after its element 0 entered; the last
        element is combinational.

    `count * (count - 1) / 2` registers of one element each; no flow control.
    """

    def delay(self, element: int) -> int:
        return self.count - 1 - element
