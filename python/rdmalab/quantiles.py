"""The one quantile definition of rdmalab's outputs (docs/outputs.md, "Quantiles").

Nearest rank: the q-quantile of n sorted values is the ⌈q·n⌉-th smallest — always
one of the values, never an interpolation. The run summary, `rdmalab analyze`,
`rdmalab hpcc analyze`, the report and the case-study figures take their
quantiles from here; the core's `tenants.csv` and `apps.csv` use the same
definition (`rdmalab_core::record::quantile`), so the same flows give the
same p99 in every file.

Plain Python at import (the run summary reads it without Polars); Polars only
for `nearest_rank_expr`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import polars as pl

# Keeps a product that floating point puts just above an integer
# (0.07 × 100 = 7.000000000000001) at that integer, as the exact product is.
_EPS = 1e-9


def nearest_rank_index(n: int, q: float) -> int:
    """The 0-based index of the q-quantile among n sorted values: ⌈q·n⌉ − 1, at least 0."""
    return min(max(math.ceil(q * n - _EPS), 1), n) - 1


def nearest_rank(values: Iterable[float], q: float) -> float:
    """The q-quantile of `values` (any order); NaN if there are none."""
    xs = sorted(values)
    return xs[nearest_rank_index(len(xs), q)] if xs else float("nan")


def nearest_rank_expr(column: str, q: float) -> "pl.Expr":
    """The q-quantile of `column` as a Polars aggregation (per group in `group_by().agg`)."""
    import polars as pl

    rank = (pl.len() * q - _EPS).ceil().cast(pl.Int64)
    idx = pl.min_horizontal(pl.max_horizontal(rank, pl.lit(1, pl.Int64)), pl.len().cast(pl.Int64)) - 1
    return pl.col(column).sort().get(idx)
