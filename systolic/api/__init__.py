"""The public Python API. `import systolic` gives these names (looked up here on first use,
so that importing the package stays cheap); each module imports the heavy parts (numpy,
protobuf, Amaranth) only when a function is called.

- `load`, `load_bytes`, `bind` (`systolic.api.loading`): an ONNX model as the IR;
- `compile` (`systolic.api.compiling`): the program for one `ArrayConfig`;
- `simulate` (`systolic.api.simulating`): run and check it on a backend, a `Simulation`;
- `configurations`, `sweep` (`systolic.api.sweeping`): one model over many configurations,
  a `Sweep`;
- `Table` (`systolic.api.table`): the reports' rows, as text, dictionaries and HTML.

>>> import systolic
>>> run = systolic.simulate(None, systolic.ArrayConfig(rows=4, cols=4), backend="model")
>>> run.layers.columns[:3]
('layer', 'op', 'unit')
>>> run.layers._repr_html_().startswith("<table>")
True
"""

from systolic.api.compiling import Compiled, compile
from systolic.api.loading import bind, load, load_bytes
from systolic.api.simulating import Simulation, simulate
from systolic.api.sweeping import Sweep, configurations, sweep
from systolic.api.table import Table
from systolic.config import ArrayConfig, Dataflow, OptionalUnit

__all__ = [
    "ArrayConfig",
    "Compiled",
    "Dataflow",
    "OptionalUnit",
    "Simulation",
    "Sweep",
    "Table",
    "bind",
    "compile",
    "configurations",
    "load",
    "load_bytes",
    "simulate",
    "sweep",
]
