"""A flow-file generator equivalent to the ns-3 HPCC simulator's `traffic_gen.py`, seeded.

Same model: each of `nhost` hosts has Poisson flow arrivals with mean
inter-arrival avg_size·8 / (bandwidth·load) (load relative to the host link),
a destination drawn uniformly from the other hosts, a size drawn from the
CDF by linear interpolation (at least 1 B), starting at 2.0 s. Differences:
it is seeded (Python's `random.Random(seed)`, the Mersenne Twister — no
numpy), the first line is the exact flow count, and every arrival inside
[base, base + duration) is kept (traffic_gen.py also drops each host's last
arrival before the end, because it checks the *next* arrival's time).
"""

from __future__ import annotations

import heapq
import math
import os
import random
import re
from pathlib import Path

from rdmalab import _core
from rdmalab._core import ScenarioError
from rdmalab.hpcc.units import parse_rate_bps
from rdmalab.scenario import integer

# Shipped CDFs: the core embeds the files of traffic_gen/ and hands out their text.
CDF_NAMES = tuple(_core.builtin_cdfs())


def parse_cdf(text: str, where: str) -> list[tuple[float, float]]:
    """`size_bytes cdf_percent` lines: from (x, 0) to (x, 100), neither column decreasing."""
    pts = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            x, y = (float(t) for t in line.split())
        except ValueError:
            raise ScenarioError(f"{where} line {n}: `{line}` must be `size_bytes cdf_percent`") from None
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ScenarioError(f"{where} line {n}: `{line}` — allowed: finite numbers")
        pts.append((x, y))
    if len(pts) < 2 or pts[0][1] != 0 or pts[-1][1] != 100 or pts[0][0] < 0:
        raise ScenarioError(f"{where}: a CDF needs at least two points, the first at 0 % (size ≥ 0), the last at 100 %")
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x1 < x0 or y1 < y0:
            raise ScenarioError(f"{where}: sizes and percents must not decrease (`{x0:g} {y0:g}` then `{x1:g} {y1:g}`)")
    if cdf_mean(pts) < 1:
        # Arrivals are spaced by the mean size's time on the link: a mean
        # of 0 B would make every flow arrive at once, without end.
        raise ScenarioError(f"{where}: the mean flow size is {cdf_mean(pts):g} B — allowed: at least 1 B")
    return pts


def load_cdf(spec: str | os.PathLike) -> list[tuple[float, float]]:
    """A CDF by shipped name (`websearch`, `fbhdp`, `alistorage2019`, `googlerpc2008`) or by file path."""
    name = str(spec)
    if name.lower() in CDF_NAMES:
        return parse_cdf(_core.builtin_cdf_text(name.lower()), f"CDF `{name}` (shipped)")
    p = Path(name)
    try:
        text = p.read_text()
    except OSError as e:
        raise ScenarioError(f"CDF `{name}`: not a shipped name ({', '.join(CDF_NAMES)}) and the file cannot be "
                            f"read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"CDF `{name}`: not UTF-8 text (byte {e.start}); a CDF file holds "
                            f"`size_bytes cdf_percent` lines") from None
    return parse_cdf(text, f"CDF `{p}`")


def cdf_mean(cdf: list[tuple[float, float]]) -> float:
    """Mean size under linear interpolation (traffic_gen's getAvg)."""
    return sum((x0 + x1) / 2 * (y1 - y0) for (x0, y0), (x1, y1) in zip(cdf, cdf[1:])) / 100


def cdf_sample(cdf: list[tuple[float, float]], u: float) -> float:
    """The size at percentile u·100 by linear interpolation."""
    y = u * 100
    for (x0, y0), (x1, y1) in zip(cdf, cdf[1:]):
        if y <= y1:
            return x0 if y1 == y0 else x0 + (x1 - x0) / (y1 - y0) * (y - y0)
    return cdf[-1][0]


def parse_bandwidth(text: str) -> int:
    """traffic_gen's `-b`: `100G`, `25G`, `10M`, a plain number (bit/s), or an ns-3 rate like `100Gbps`."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([GMK]?)\s*", str(text))
    try:
        if m:
            v = float(m.group(1)) * {"G": 1e9, "M": 1e6, "K": 1e3, "": 1}[m.group(2)]
        else:
            v = parse_rate_bps(str(text))
    except ValueError:
        v = 0
    if not (v > 0 and math.isfinite(v)):
        raise ScenarioError(f"bandwidth `{text}`: write it like `100G`, `25G` or `100Gbps`")
    return int(round(v))


#: The most flows `generate_flows` draws, as for a scenario's Poisson entry
#: (the core's MAX_POISSON_FLOWS): the list is held in memory and written
#: out, so `-t 1e9` would fill memory and disk rather than end.
MAX_FLOWS = 20_000_000


def generate_flows(
    cdf: list[tuple[float, float]],
    nhost: int,
    load: float,
    bandwidth_bps: float,
    seconds: float,
    seed: int,
    base_ns: int = 2_000_000_000,
) -> list[tuple[int, int, int, int]]:
    """Flows `(src, dst, size_bytes, start_ns)` sorted by start (ties by src), host ids 0..nhost-1."""
    if nhost < 2:
        raise ScenarioError(f"nhost `{nhost}`: needs at least two hosts")
    if not 0 < load <= 1:
        raise ScenarioError(f"load `{load}`: must be greater than 0 and at most 1 (a fraction of the host link)")
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ScenarioError(f"time `{seconds}`: must be a positive number of seconds")
    expected = nhost * bandwidth_bps * load * seconds / (8 * cdf_mean(cdf))
    if expected > MAX_FLOWS:
        raise ScenarioError(f"about {expected:.3e} flows (hosts × load × bandwidth × time / mean flow size) — "
                            f"allowed: at most {MAX_FLOWS}; lower nhost, load or time, or use larger flows")
    # A NumPy integer seed as the int it is: random.Random refuses the type, not the value.
    as_int = integer(seed)
    rng = random.Random(seed if as_int is None else as_int)
    mean_gap_ns = cdf_mean(cdf) * 8 / (bandwidth_bps * load) * 1e9
    end = base_ns + int(seconds * 1e9)

    def gap() -> int:
        return int(-math.log(1.0 - rng.random()) * mean_gap_ns)

    heap = [(base_ns + gap(), h) for h in range(nhost)]
    heapq.heapify(heap)
    flows = []
    while heap:
        t, src = heap[0]
        if t >= end:
            heapq.heappop(heap)
            continue
        dst = rng.randrange(nhost - 1)
        dst += dst >= src  # uniform over the other hosts, one draw
        size = max(1, int(cdf_sample(cdf, rng.random())))
        flows.append((src, dst, size, t))
        heapq.heapreplace(heap, (t + gap(), src))
    return flows


def write_flow_file(path: str | os.PathLike, flows: list[tuple[int, int, int, int]], pg: int = 3,
                    dport: int = 100) -> None:
    """ns-3's flow-file format: the count, then `src dst pg dport size start_s` (start in seconds, 9 decimals)."""
    lines = [f"{len(flows)}"]
    lines += [f"{s} {d} {pg} {dport} {size} {t // 10**9}.{t % 10**9:09d}" for s, d, size, t in flows]
    Path(path).write_text("\n".join(lines) + "\n")
