"""The exported topology read by the real SCALE-Sim 3.0 (in a throwaway environment: it needs
numpy < 2.4, so slow): its output sizes and MACs are ours, stride-2 layers included."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from systolic.compare.sweep import prepare_model
from systolic.compare.to_topology import model_topology
from systolic.compare.topology import format_topology

pytestmark = pytest.mark.slow

RESNET_TINY = Path(__file__).parents[2] / "models" / "resnet_tiny_qdq.onnx"
READ = """
import json, sys
from scalesim.topology_utils import topologies
t = topologies()
t.load_arrays(topofile=sys.argv[1])
t.topo_calc_hyperparams()
print(json.dumps([[a[0], *h[:3]] for a, h in zip(t.topo_arrays, t.layers_calculated_hyperparams)]))
"""


def test_scalesim_reads_our_output_sizes_and_macs(tmp_path: Path) -> None:
    rows = model_topology(prepare_model(RESNET_TINY).integer)
    topology = tmp_path / "resnet_tiny.csv"
    topology.write_text(format_topology(rows))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "scalesim==3.0.0", "numpy<2.4"],
                   check=True)  # fmt: skip
    done = subprocess.run([python, "-c", READ, str(topology)], capture_output=True, text=True,
                          check=True)  # fmt: skip
    theirs = json.loads(done.stdout)
    assert [name for name, *_ in theirs] == [row.name for row in rows]
    assert any(row.stride == 2 for row in rows)
    for (_, height, width, macs), row in zip(theirs, rows, strict=True):
        assert (height, width, macs) == (row.ofmap_h, row.ofmap_w, row.macs)
