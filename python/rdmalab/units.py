"""Numbers as people read them: times in ps/ns/µs/ms/s, sizes in B/KB/MB/GB,
counts with their noun in the right number."""

from __future__ import annotations

import math

# (name, picoseconds per unit), smallest first
TIME_UNITS = [("ps", 1), ("ns", 10**3), ("µs", 10**6), ("ms", 10**9), ("s", 10**12)]
SIZE_UNITS = [("B", 1), ("KB", 10**3), ("MB", 10**6), ("GB", 10**9)]


def time_unit(max_ps: float) -> tuple[str, int]:
    """The unit to show times up to `max_ps` in: the largest one in which the
    largest value is at least 1 (2 ms of run → ms, 300 µs → µs)."""
    name, per = TIME_UNITS[0]
    for n, p in TIME_UNITS:
        if max_ps >= p:
            name, per = n, p
    return name, per


def fmt_time(ps: float | None) -> str:
    """`1500000` → `1.5 µs`; three significant digits."""
    if ps is None or (isinstance(ps, float) and not math.isfinite(ps)):
        return ""
    name, per = time_unit(abs(ps))
    return f"{ps / per:.3g} {name}"


def fmt_size(n: float | None) -> str:
    """`1048576` → `1.05 MB` (decimal units, as the scenario's `1MB` means 10^6 B)."""
    if n is None:
        return ""
    name, per = SIZE_UNITS[0]
    for u, p in SIZE_UNITS:
        if abs(n) >= p:
            name, per = u, p
    return f"{n / per:.3g} {name}"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """`1 flow`, `2 flows`, `0 flows` (with `nouns` for irregular plurals)."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"
