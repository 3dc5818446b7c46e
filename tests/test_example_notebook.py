"""The example notebook (examples/analysis.ipynb) runs from top to bottom in a fresh kernel, and
is the one examples/make_notebook.py writes. Its cells assert what they show (intervals meet
the accuracy target, the histogram's bins are pd.cut's, the session stays within budget)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("polars")
pytest.importorskip("dask.dataframe")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_committed_notebook_is_the_generated_one() -> None:
    spec = importlib.util.spec_from_file_location("make_notebook", EXAMPLES / "make_notebook.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = [(c.cell_type, c.source) for c in module.build().cells]
    nb = nbformat.read(EXAMPLES / "analysis.ipynb", as_version=4)
    assert [(c.cell_type, c.source) for c in nb.cells] == built
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_the_notebook_runs() -> None:
    nb = nbformat.read(EXAMPLES / "analysis.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = "".join(o.get("text", "") for o in outputs if o.output_type == "stream"
                     and o.get("name") == "stderr")
    assert "TqdmWarning" not in stderr and "IProgress" not in stderr
    html = [o for o in outputs if o.output_type == "execute_result"
            and "text/html" in o.get("data", {})]
    assert len(html) >= 4  # the session, the frame, a result and tables render as HTML
