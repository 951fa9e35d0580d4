"""ns-3 HPCC `fct.txt` files (from ns-3 or from rdmalab): reading, and slowdown by size.

Each line is `sip dip sport dport size start_time fct standalone_fct`: hex
IPv4 addresses (`0x0b000001 + (id/256)<<16 + (id%256)<<8`), bytes, ns.
`fct_slowdown` applies the filters of ns-3's `analysis/fct_analysis.py`
(a dport — 100 normal, 200 incast — and start + fct < T), takes its
slowdown (fct / standalone_fct, at least 1), and buckets it with
`rdmalab.analysis.slowdown_by_size`. `fct_analysis_rows` instead gives
the numbers `fct_analysis.py` itself prints, to the last digit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    import polars as pl

# Polars and rdmalab.analysis are imported where they are used: the command
# line imports this module (for FctFileError) on every start, and a run
# should not pay 0.25 s for tables it never builds.

COLUMNS = ["sip", "dip", "sport", "dport", "size_bytes", "start_ns", "fct_ns", "standalone_fct_ns"]


class FctFileError(ValueError):
    """A file that is not in ns-3's FCT format."""


def ip_to_node(ip: int) -> int:
    """ns-3's `ip_to_node_id`: (ip >> 8) & 0xffff."""
    return (ip >> 8) & 0xFFFF


def node_to_ip(node: int) -> int:
    """ns-3's `node_id_to_ip`."""
    return 0x0B000001 + (node // 256) * 0x10000 + (node % 256) * 0x100


def read_fct(path: str | os.PathLike) -> pl.DataFrame:
    """One row per line: the 8 columns (IPs as integers), `src`/`dst` node ids and `slowdown`
    (fct / standalone_fct, clamped at ≥ 1 as fct_analysis.py does)."""
    import polars as pl

    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise FctFileError(f"`{p}` cannot be read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise FctFileError(f"`{p}` is not UTF-8 text (byte {e.start}); an FCT file holds lines of 8 fields: "
                           f"sip dip sport dport size start_time fct standalone_fct") from None
    rows: list[list[int]] = []
    for n, line in enumerate(text.splitlines(), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 8:
            raise FctFileError(f"`{p}` line {n}: `{line}` — an FCT line has 8 fields: "
                               f"sip dip sport dport size start_time fct standalone_fct")
        try:
            # Digits only: int() also takes `-5`, `+5` and `1_000`, and Polars
            # fails with its own error on a value past 64 bits.
            hexes = [x.lower().removeprefix("0x") for x in f[:2]]
            if not all(x.isascii() and x.isdigit() for x in f[2:]) or not all(
                    x and all(c in "0123456789abcdef" for c in x) for x in hexes):
                raise ValueError
            row = [int(f[0], 16), int(f[1], 16)] + [int(x) for x in f[2:]]
        except ValueError:
            raise FctFileError(f"`{p}` line {n}: `{line}` — IPs must be hex and the other fields integers "
                               f"of 0 or more") from None
        if max(row) >= 2**63:
            raise FctFileError(f"`{p}` line {n}: `{line}` — a field beyond 64 bits; allowed: 0 to {2**63 - 1}")
        if row[7] == 0:
            # fct_analysis.py would divide by it; clamping it to 1 ns made a slowdown of fct itself.
            raise FctFileError(f"`{p}` line {n}: `{line}` — standalone_fct is 0; allowed: 1 ns or more "
                               f"(the slowdown divides by it)")
        rows.append(row)
    df = pl.DataFrame(rows, schema={c: pl.Int64 for c in COLUMNS}, orient="row")
    return df.with_columns(
        ((pl.col("sip") // 256) % 65536).alias("src"),
        ((pl.col("dip") // 256) % 65536).alias("dst"),
        (pl.col("start_ns") * 1000).alias("start_ps"),
        pl.max_horizontal(pl.col("fct_ns") / pl.max_horizontal(pl.col("standalone_fct_ns"), pl.lit(1)), pl.lit(1.0))
        .alias("slowdown"),
    )


def fct_slowdown(
    files: Sequence[str | os.PathLike] | Mapping[str, str | os.PathLike | pl.DataFrame],
    dport: int | None = 100,
    time_limit_ns: int | None = None,
    buckets: int = 20,
    quantiles: Sequence[float] | None = None,
) -> pl.DataFrame:
    """FCT slowdown by flow-size bucket for one or more fct.txt files, one block per `file`.

    `dport`: keep flows to this destination port (fct_analysis `-t 0` = 100,
    `-t 1` = 200; None keeps all). `time_limit_ns`: keep flows with
    start + fct < T (flows that finished before T). Then 20 buckets of 5 % of
    the flows each by size, with nearest-rank quantiles (`rdmalab.quantiles`,
    as every output of rdmalab; ns-3's fct_analysis.py takes element int(n·q)
    instead, docs/hpcc.md) and `rdmalab.analysis.slowdown_by_size`'s buckets.
    Columns: `file`, `bucket`, `flows`, `size_min_bytes`, `size_max_bytes`,
    `mean`, `p50`, `p95`, `p99`, `p99_9` (`quantiles`: None gives
    `rdmalab.analysis.DEFAULT_QUANTILES`).
    """
    import polars as pl

    from rdmalab.analysis import DEFAULT_QUANTILES, slowdown_by_size

    if quantiles is None:
        quantiles = DEFAULT_QUANTILES
    items = files.items() if isinstance(files, Mapping) else ((str(f), f) for f in files)
    frames = []
    for label, f in items:
        df = f if isinstance(f, pl.DataFrame) else read_fct(f)
        if dport is not None:
            df = df.filter(pl.col("dport") == dport)
        if time_limit_ns is not None:
            df = df.filter(pl.col("start_ns") + pl.col("fct_ns") < time_limit_ns)
        frames.append(df.select("size_bytes", "slowdown", "start_ps").with_columns(pl.lit(label).alias("file")))
    return slowdown_by_size(pl.concat(frames), by=["file"], buckets=buckets, quantiles=quantiles)


# fct_analysis.py keeps flows with start + fct below this (ns) unless given -T.
FCT_ANALYSIS_TIME_LIMIT_NS = 3_000_000_000


def _awk_text(x: float) -> str:
    """A number as awk's `print` writes it: an integral value as an integer,
    any other with OFMT, `%.6g`."""
    return str(int(x)) if x == int(x) and abs(x) < 2**53 else "%.6g" % x


def fct_analysis_rows(
    df: pl.DataFrame,
    dport: int | None = 100,
    time_limit_ns: int = FCT_ANALYSIS_TIME_LIMIT_NS,
    step: int = 5,
) -> list[tuple[float, int, float, float, float]]:
    """The table ns-3 HPCC's `analysis/fct_analysis.py` prints for one file
    (`read_fct`'s frame), computed its way: each kept flow's slowdown as awk
    writes it (`%.6g`, and 1 below 1), the lines sorted by size as
    `sort -n -k 2` sorts them in the C locale (equal sizes by the line's
    bytes), the last line dropped (its `split('\\n')[:-2]`), buckets cut at
    `i·n/100` in integer division, and element `int(len·q)` of each
    bucket's sorted slowdowns. Rows: (bucket start as a fraction, the
    bucket's last flow size, p50, p95, p99). A bucket without flows, where
    the script fails, is an error naming how many flows there are."""
    if not 0 < step <= 100 or 100 % step:
        raise ValueError(f"step: {step} — allowed: a divisor of 100 (5: 20 buckets of 5 %)")
    lines = []
    for dp, start, fct, standalone, size in zip(
            df["dport"], df["start_ns"], df["fct_ns"], df["standalone_fct_ns"], df["size_bytes"]):
        if (dport is not None and dp != dport) or not start + fct < time_limit_ns:
            continue
        slow = fct / standalone
        text = _awk_text(1 if slow < 1 else slow)
        lines.append((size, f"{text} {size}".encode(), float(text)))
    lines.sort(key=lambda line: (line[0], line[1]))
    kept = lines[:-1]
    n = len(kept)
    rows = []
    for i in range(0, 100, step):
        bucket = kept[i * n // 100:(i + step) * n // 100]
        if not bucket:
            raise FctFileError(f"{n} flows left after the filters (and the last one fct_analysis.py drops): too few "
                               f"for buckets of {step} % each, where fct_analysis.py fails on an empty one")
        slow = sorted(x[2] for x in bucket)
        rows.append((i / 100, bucket[-1][0], *(slow[int(len(slow) * q)] for q in (0.5, 0.95, 0.99))))
    return rows
