"""The accuracy page generator (issue 32 g): ``benchmarks/accuracy/run.py --quick`` writes a
page with every bench module's section and the summary table of targets, without peers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "benchmarks" / "accuracy" / "run.py"


@pytest.mark.slow  # about 40 s on 2 shared cores
def test_quick_page_without_peers(tmp_path: Path) -> None:
    out = tmp_path / "accuracy.md"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, str(RUN), "--quick", "--out", str(out)], env=env,
                   check=True, capture_output=True, text=True, timeout=300)
    page = out.read_text()
    assert page.startswith("# Accuracy at a fixed budget")
    assert "Peer environments on the path: none" in page
    for topic in sorted(p.stem for p in RUN.parent.glob("bench_*.py")):
        assert f"{topic}.py" in page, topic  # each section says how to reproduce it
    table = page[page.index("## Issue 32 targets"):]
    assert "Gaussian sum at (1, 1e-6)" in table and "DP bound choice" in table
    assert table.count("| b |") == 2
