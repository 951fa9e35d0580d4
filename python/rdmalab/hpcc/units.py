"""ns-3's own value syntax: DataRate and Time strings, and `Seconds(double)`.

rdmalab's unit parser reads rates case-insensitively, but ns-3 does not:
`50MB/s` is 400 Mb/s there (B = bytes). So ns-3 strings are parsed here,
exactly as ns-3 reads them, and handed to the core as plain `bps` / `ps`.
"""

from __future__ import annotations

import re

# rdmalab's bounds on any rate and duration, from the core: a value past them
# is refused, not saturated.
from rdmalab._core import MAX_DURATION_PS, MAX_RATE_BPS

# ns-3 DataRate::DoParse suffixes (case-sensitive; B = bytes, i = binary prefixes).
_RATE_UNITS: dict[str, float] = {}
for _p, _mult in (("", 1), ("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9)):
    _RATE_UNITS[f"{_p}bps"] = _RATE_UNITS[f"{_p}b/s"] = _mult
    _RATE_UNITS[f"{_p}Bps"] = _RATE_UNITS[f"{_p}B/s"] = 8 * _mult
for _p, _mult in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30)):
    _RATE_UNITS[f"{_p}b/s"] = _mult
    _RATE_UNITS[f"{_p}B/s"] = 8 * _mult

# ns-3 Time string suffixes, in picoseconds. A bare number is seconds.
_TIME_UNITS_PS = {"fs": 1e-3, "ps": 1, "ns": 1e3, "us": 1e6, "ms": 1e9, "s": 1e12, "min": 60e12, "h": 3600e12,
                  "d": 86400e12}


_NUM = r"[+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def parse_rate_bps(text: str) -> int:
    """An ns-3 DataRate string (`100Gbps`, `50Mb/s`, `1GB/s`) in bit/s. Raises ValueError."""
    m = re.fullmatch(rf"\s*({_NUM})\s*([A-Za-z/]+)\s*", text)
    if not m or m.group(2) not in _RATE_UNITS:
        raise ValueError(f"`{text}` is not an ns-3 data rate (like `100Gbps` or `50Mb/s`; ns-3 accepts "
                         f"{', '.join(sorted(_RATE_UNITS))})")
    v = float(m.group(1)) * _RATE_UNITS[m.group(2)]
    if not v <= MAX_RATE_BPS:  # also catches inf (1e400)
        raise ValueError(f"`{text}` is above rdmalab's largest rate, 10Tbps")
    return int(round(v))


def ns3_data_rate_parses(text: str) -> bool:
    """Whether ns-3's DataRate takes `text` at all, as its DoParse reads it:
    the leading digits and dots, then one of its unit suffixes, or nothing
    (a bare number is bit/s). It aborts on anything else (`-5Mb/s`, `fast`)."""
    number = len(text) - len(text.lstrip("0123456789."))
    return text[number:] == "" or text[number:] in _RATE_UNITS


def parse_time_ps(text: str) -> int:
    """An ns-3 Time string (`1000ns`, `0.001ms`, `1us`; a bare number is seconds) in picoseconds."""
    m = re.fullmatch(rf"\s*({_NUM})\s*([a-z]*)\s*", text)
    if not m or (m.group(2) and m.group(2) not in _TIME_UNITS_PS):
        raise ValueError(f"`{text}` is not an ns-3 time (like `1000ns` or `1us`)")
    v = float(m.group(1)) * _TIME_UNITS_PS[m.group(2) or "s"]
    if not v <= MAX_DURATION_PS:  # also catches inf (1e400)
        raise ValueError(f"`{text}` is above rdmalab's longest duration, one hour")
    return int(round(v))


def seconds_to_ns(text: str) -> int:
    """ns-3.17's `Seconds(double)` at ns resolution, bit for bit: its 64.64
    fixed point keeps trunc(v · 2^64), and the time is the high word of that
    times 10^9. So `2.000002612` becomes 2000002611 ns and `2.0002`
    2000199999 ns, as ns-3 does (the doubles are a hair below)."""
    v = float(text)
    if not v >= 0 or v >= 2.0**33:
        raise ValueError(f"`{text}` is not a number of seconds from 0 to 2^33")
    return (int(v * 2.0**64) * 10**9) >> 64


def rate_text(bps: int) -> str:
    """A rate for a native scenario, exact: `100Gbps` when it is whole, else `NNNbps`."""
    for unit, mult in (("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps % mult == 0:
            return f"{bps // mult}{unit}"
    return f"{bps}bps"


def ps_text(ps: int) -> str:
    """A duration for a native scenario, exact."""
    for unit, mult in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps % mult == 0:
            return f"{ps // mult}{unit}"
    return f"{ps}ps"


def us_text(value: float) -> str:
    """ns-3's µs-valued doubles (ALPHA_RESUME_INTERVAL ...) as an exact duration."""
    return ps_text(int(round(value * 1e6)))
