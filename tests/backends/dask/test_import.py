"""``ddf.dp`` exists whatever the import order, and ``import dpframe`` never imports Dask
(0.1 gave ``AttributeError`` for ``import dpframe; import dask.dataframe``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("dask.dataframe")

_CHECK = """
import pandas as pd
ddf = dd.from_pandas(pd.DataFrame({"x": [1.0, 2.0, 3.0]}), npartitions=2)
import dpframe as dpf
s = dpf.Session(epsilon=1e7, seed=1)
n = ddf.dp(s).count(epsilon=1e6)
assert int(n) == 3, n
print("ok")
"""


@pytest.mark.parametrize("prelude", [
    "import dpframe\nimport sys\nassert 'dask' not in sys.modules\nimport dask.dataframe as dd",
    "import dask.dataframe as dd\nimport dpframe",
    "import dpframe\nimport dask\nfrom dask import dataframe as dd",
    "import dpframe.fronts.dask\nimport dask.dataframe as dd",
])
def test_dask_accessor_whatever_the_import_order(prelude: str) -> None:
    code = textwrap.dedent(prelude) + "\nimport warnings\nwarnings.simplefilter('ignore')\n" \
        + _CHECK
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_the_hook_leaves_no_finder_behind() -> None:
    code = ("import sys, dpframe\nfrom dpframe.fronts.hooks import AfterImport\n"
            "def hooks(): return [f for f in sys.meta_path if isinstance(f, AfterImport)"
            " and f.name == 'dask.dataframe']\n"
            "assert hooks()\n"
            "import dask.dataframe\n"
            "assert not hooks()\n"
            "assert 'dpframe.fronts.dask' in sys.modules\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
