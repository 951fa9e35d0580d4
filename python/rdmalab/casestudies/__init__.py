"""Case-study figures: the plots that reproduce a paper's figure in kind.

A scenario or sweep file names the figures it is made for with a top-level
``figures: [NAME, ...]`` key; ``rdmalab run`` and ``rdmalab sweep`` draw them
into ``OUT/plots/`` when the runs are done, and ``rdmalab plot`` draws them
again with the standard plots. Each figure is a function from the results
(a run or a sweep directory) to plot descriptions (``plots.Figure``), and the
numbers behind it are written next to the image as CSV, so a figure is never
only a picture.

Modules register their figures with :func:`figure`; ``rdmalab figures``
lists them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: Where a run or sweep directory keeps the names of its figures.
FIGURES_FILE = "figures.json"


@dataclass
class CaseFigure:
    name: str
    paper: str
    description: str
    draw: Callable  # (Results) -> list[tuple[plots.Figure, polars.DataFrame | None]]


FIGURES: dict[str, CaseFigure] = {}


_SIZE_UNITS = {"B": 1, "KB": 1000, "kB": 1000, "KiB": 1024, "MB": 1000**2, "MiB": 1024**2,
               "GB": 1000**3, "GiB": 1024**3}


def size_bytes(text) -> float:
    """Bytes of a scenario size (`4KB`, `1MiB`, a number), as a sweep axis holds it."""
    for unit in sorted(_SIZE_UNITS, key=len, reverse=True):
        if str(text).endswith(unit):
            return float(str(text)[: -len(unit)]) * _SIZE_UNITS[unit]
    return float(text)


def figure(name: str, paper: str, description: str):
    """Register `fn(results) -> [(Figure, table or None), ...]` as figure `name`."""

    def wrap(fn):
        FIGURES[name] = CaseFigure(name, paper, description, fn)
        return fn

    return wrap


#: Every figure and the module that draws it. Checking a scenario's `figures:`
#: reads only this, so loading a scenario imports no Polars; a test keeps it
#: equal to what the modules register.
MODULES: dict[str, str] = {
    "scr-fig9": "fair_scheduler",
    "scr-fig11": "fair_scheduler",
    "scr-fig12": "fair_scheduler",
    "scr-fig13": "fair_scheduler",
    "scr-fig21": "fair_scheduler",
    "scr-fig14": "dequeue_rate",
    "scr-fig15a": "dpa",
    "scr-fig15b": "dpa",
    "scr-fig18": "swift_cc",
    "scr-fig22": "dpa",
    "scr-table2": "fair_scheduler",
    "scr-table5": "fair_scheduler",
    "scr-fig19a": "multipath",
    "scr-fig19b": "multipath",
    "scr-fig20a": "receiver",
    "scr-fig20b": "receiver",
    "scr-fig20c": "receiver",
    "srnic-fig2": "srnic",
    "srnic-fig10": "srnic",
    "srnic-fig11": "srnic",
    "srnic-fig12": "srnic",
    "swiftrdma-fig4": "swiftrdma",
    "swiftrdma-fig5": "swiftrdma",
    "swiftrdma-cache": "swiftrdma",
    "srnic-table1": "srnic",
    "swcc-fig1": "swcc",
    "swcc-fig11": "swcc",
    "swcc-table1": "swcc",
    "swcc-fig10": "swcc",
    "swcc-fig14": "swcc",
    "attacks-fig3": "attacks",
    "attacks-fig4": "attacks",
    "attacks-fig5": "attacks",
    "attacks-fig6": "attacks",
}


def _load_all() -> None:
    # Importing a module registers its figures.
    import importlib

    for module in sorted(set(MODULES.values())):
        importlib.import_module(f"rdmalab.casestudies.{module}")


def known() -> dict[str, CaseFigure]:
    _load_all()
    return FIGURES


def check_names(value, where: str) -> list[str]:
    """The figure names of a `figures:` key, or a ValueError naming key, value and what is allowed."""
    if value is None:
        return []
    figs = MODULES  # not known(): checking imports nothing heavy (Polars, matplotlib)
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{where}: {json.dumps(value)} must be a list of figure names; allowed: {', '.join(sorted(figs))}")
    for n in names:
        if n not in figs:
            raise ValueError(f"{where}: `{n}` is not a known figure; allowed: {', '.join(sorted(figs))}")
    return names


def remember(out_dir: str | Path, names: list[str]) -> None:
    if names:
        Path(out_dir, FIGURES_FILE).write_text(json.dumps(names) + "\n")


def remembered(path: str | Path) -> list[str]:
    f = Path(path, FIGURES_FILE)
    return json.loads(f.read_text()) if f.exists() else []


def write_figures(path: str | Path, names: list[str], out_dir: str | Path, fmt: str = "png",
                  problems: list[str] | None = None) -> list[Path]:
    """Draw figures `names` of the run or sweep directory `path` into `out_dir`,
    each image with a CSV of the numbers it shows. A figure is made for the
    shipped scenarios that name it: one that finds nothing it shows in these
    results, or fails on them, draws nothing and says why in `problems`."""
    import polars as pl

    from rdmalab.plots import render
    from rdmalab.sweep.store import Results

    results = Results(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for n in names:
        try:
            drawn = list(known()[n].draw(results))
        except Exception as e:  # a figure drawn from results of another shape than it was made for
            if problems is not None:
                problems.append(f"figure `{n}` cannot be drawn from {path} ({type(e).__name__}: {e}); "
                                f"it is made for the shipped scenarios that name it (`rdmalab figures`)")
            continue
        if not drawn and problems is not None:
            problems.append(f"figure `{n}`: nothing to draw, {path} holds none of what it shows; "
                            f"it is made for the shipped scenarios that name it (`rdmalab figures`)")
        for fig, table in drawn:
            written.append(render(fig, out / f"{fig.key}.{fmt}"))
            if isinstance(table, pl.DataFrame):
                table.write_csv(out / f"{fig.key}.csv")
                written.append(out / f"{fig.key}.csv")
    return written
