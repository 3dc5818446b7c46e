"""Complexity budget of the package, checked in CI: no block graded D, E or F by radon, at most
3% of blocks graded C or worse, and none in the aggregates and their plan types
(:data:`SIMPLE`: one aggregate is one short module). Prints the offenders; exits 1 when the
budget is exceeded.

    python tools/complexity.py [--max-share 0.03]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent / "dpframe"

#: Where every block must grade A or B: the aggregates and the generic plan types they use.
SIMPLE = ("dpframe/core/aggregates/", "dpframe/core/measure.py")


def blocks(root: Path) -> list[tuple[str, str, int]]:
    """(file, block name, complexity) of every function, method and class under ``root``; a
    name defined several times in a file (``@overload`` stubs, then the implementation) is one
    block, the most complex, so typing stubs do not dilute the share of complex blocks."""
    out: dict[tuple[str, str], int] = {}
    for path in sorted(root.rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            key = (str(path.relative_to(root.parent)), block.fullname)
            out[key] = max(out.get(key, 0), block.complexity)
    return [(f, n, c) for (f, n), c in out.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-share", type=float, default=0.03,
                        help="largest share of blocks graded C or worse (default 0.03)")
    args = parser.parse_args(argv)
    every = blocks(ROOT)
    complex_ = [(f, n, c) for f, n, c in every if cc_rank(c) not in "AB"]
    worst = [(f, n, c) for f, n, c in complex_ if cc_rank(c) in "DEF"]
    not_simple = [(f, n, c) for f, n, c in complex_ if f.startswith(SIMPLE)]
    share = len(complex_) / max(1, len(every))
    for f, n, c in sorted(complex_, key=lambda t: -t[2]):
        print(f"{cc_rank(c)} ({c:2d})  {f}: {n}")
    print(f"{len(complex_)} of {len(every)} blocks graded C or worse ({share:.1%}, budget "
          f"{args.max_share:.0%}); {len(worst)} graded D, E or F (budget 0); "
          f"{len(not_simple)} C or worse in {', '.join(SIMPLE)} (budget 0)")
    return 1 if worst or not_simple or share > args.max_share else 0


if __name__ == "__main__":
    sys.exit(main())
