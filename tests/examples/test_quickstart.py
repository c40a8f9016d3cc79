"""examples/quickstart.ipynb runs from top to bottom and shows its reports as HTML tables."""

from pathlib import Path

import pytest

nbclient = pytest.importorskip(
    "nbclient", reason="running the notebook needs nbclient, nbformat and ipykernel (test extra)"
)
nbformat = pytest.importorskip("nbformat", reason="running the notebook needs nbformat")
pytest.importorskip("ipykernel", reason="running the notebook needs an IPython kernel")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "quickstart.ipynb"


def test_quickstart_notebook_runs_and_renders_html_tables(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute()
    results = [output for cell in notebook.cells if cell.cell_type == "code"
               for output in cell.outputs if output.output_type == "execute_result"]  # fmt: skip
    html = [output.data["text/html"] for output in results if "text/html" in output.data]
    assert len(html) == 4  # the program, the run, the sweep, the slowest layers
    assert all(table.count("<table>") == 1 for table in html)
    assert "16x16 os" in html[2]
