"""The package's import graph at the level of its rooms (sub-packages), for docs/architecture.md.

    python tools/import_graph.py [--markdown]

Reads the imports with grimp (installed with import-linter, a dev dependency), folds modules
into rooms (``dpframe.core`` top-level modules are one room, each sub-package another) and prints
each room with the rooms it imports, ordered from the top floor down; an arrow from a room to one
above it (a higher layer in ``pyproject.toml``'s layers contract, or the core's top from a wing)
is marked ``(up)``. Nothing is executed but the import scan.
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import grimp

#: Rooms from the top floor down; a module belongs to the longest prefix that names a room.
ROOMS = [
    "dpframe.cli", "dpframe.export", "dpframe.plot", "dpframe.fronts", "dpframe.local",
    "dpframe.testing", "dpframe.engine", "dpframe.engine.ledger", "dpframe.display",
    "dpframe.backends.dask", "dpframe.backends", "dpframe.backends.arrow",
    "dpframe.core", "dpframe.core.aggregates", "dpframe.core.noise", "dpframe.core.exact",
    "dpframe.core.accounting", "dpframe.core.numbers", "dpframe.errors",
]


def room(module: str) -> str | None:
    best = None
    for r in ROOMS:
        if (module == r or module.startswith(r + ".")) and (best is None or len(r) > len(best)):
            best = r
    return best


def rooms_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("dpframe")
    arrows: dict[str, set[str]] = defaultdict(set)
    for module in graph.modules:
        src = room(module)
        if src is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            dst = room(imported)
            if dst is not None and dst != src:
                arrows[src].add(dst)
    return arrows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    arrows = rooms_graph()
    order = {r: i for i, r in enumerate(ROOMS)}
    up = 0
    if args.markdown:
        print("| room | imports |\n| --- | --- |")
    for r in ROOMS:
        targets = sorted(arrows.get(r, ()), key=order.__getitem__)
        marked = []
        for t in targets:
            back = order[t] < order[r]
            up += back
            marked.append(f"{t.removeprefix('dpframe.')}{' (up)' if back else ''}")
        name = r.removeprefix("dpframe.")
        if args.markdown:
            print(f"| `{name}` | {', '.join(f'`{m}`' for m in marked) or '-'} |")
        else:
            print(f"{name:22} -> {', '.join(marked) or '-'}")
    print(f"\n{up} arrow(s) run back up")


if __name__ == "__main__":
    main()
