"""Running a scenario: progress with an ETA, outputs, summary."""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from rdmalab import _core
from rdmalab.outputs import prepare_out_dir, write_outputs
from rdmalab.scenario import LoadedScenario, ScenarioWarning

# Progress is reported this many times over the simulated duration.
_PROGRESS_STEPS = 200
# ... and this many times on several threads: each step starts the threads
# again and cuts a window short, which cost (b) 0.2 s of 2.3 s at 200 steps
# (docs/parallel.md). The outputs do not depend on the steps.
_PARALLEL_PROGRESS_STEPS = 20


@dataclass
class RunResult:
    """What one run produced: its summary, where its files are (if any), and
    its tables in memory (``result.table("flows")``, ``result.tables``) as
    Polars frames with the typed columns of docs/outputs.md."""

    summary: dict
    out_dir: Path | None
    wall_seconds: float
    _sim: object = None
    _frames: dict | None = None

    @property
    def paths(self) -> dict[str, Path]:
        """The output files by name (empty without an output directory)."""
        if self.out_dir is None:
            return {}
        return {p.name: p for p in sorted(Path(self.out_dir).iterdir()) if p.is_file()}

    def table(self, name: str):
        """Output table `name` as a Polars DataFrame."""
        import polars as pl

        from rdmalab.outputs import COLUMNS, table_from_csv

        if name not in COLUMNS:
            raise ValueError(f"no table `{name}`; allowed: {', '.join(COLUMNS)}")
        if self._frames is None:
            self._frames = {}
        if name not in self._frames:
            if self._sim is not None:
                arrow = table_from_csv(bytes(self._sim.table_csv(name)), name)
            elif self.out_dir is not None:
                from rdmalab.outputs import read_table

                arrow = read_table(self.out_dir, name)
            else:
                raise ValueError("this result keeps no tables")
            self._frames[name] = pl.from_arrow(arrow)
        return self._frames[name]

    @property
    def tables(self) -> dict:
        """Every output table, by name."""
        from rdmalab.outputs import COLUMNS

        return {name: self.table(name) for name in COLUMNS}

    def __getattr__(self, name: str):
        # result.flows, result.qp_samples, ...: the table of that name.
        from rdmalab.outputs import COLUMNS

        if name in COLUMNS:
            return self.table(name)
        raise AttributeError(f"'RunResult' has no attribute {name!r}")


def late_starts_warning(late_flows: int, late_apps: int, duration_ps: int) -> str | None:
    """What to say of flows and applications that start at or after the run's
    duration (they cannot complete), or None."""
    from rdmalab.units import fmt_time, plural

    parts = [plural(n, what) for n, what in ((late_flows, "flow"), (late_apps, "application")) if n]
    if not parts:
        return None
    one = late_flows + late_apps == 1
    return (f"{' and '.join(parts)} start{'s' if one else ''} at or after the duration ({fmt_time(duration_ps)}): "
            f"{'it' if one else 'they'} cannot complete; lengthen `duration` or move the starts")


def validate(scenario, quantities: bool = False) -> dict:
    """Check a scenario without running it; raises ScenarioError listing every problem.
    `scenario` is what `run` takes: a file path, a mapping or a loaded scenario.
    With `quantities`, the result also lists every quantity written with a
    unit as the core read it: `(key, kind, value)`, kind `rate` (bit/s),
    `duration` (ps) or `size` (bytes)."""
    scenario = _as_scenario(scenario, {})
    info = _core.validate(scenario.to_json(), quantities)
    if scenario.controller is not None:
        info["cc"] = scenario.controller[1]
    # Settings that do nothing here, as `run` warns of them (and their keys,
    # in the same order); one that only lacks a controller does not apply
    # to a Python controller (the core sees it as no CC).
    inert = [(key, text) for key, text, without_cc in info["warnings"]
             if not (without_cc and scenario.controller is not None)]
    info["warnings"] = [text for _, text in inert]
    info["warning_keys"] = [key for key, _ in inert]
    return info


def _fmt_secs(s: float) -> str:
    if s < 60:
        return f"{s:4.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"


class _Progress:
    """One line on stderr: simulated time, flows done, events/s and ETA.

    A run ends at its stop time or when its flows are done, whichever comes
    first, so progress is tracked on both: simulated time, and (when the
    workload has flows) the payload delivered out of the flows' bytes, which
    events follow almost exactly. The ETA is the sooner of the two ends. A
    run slows as its fabric fills (the 320-host WebSearch example: a quarter
    of the work in a tenth of the time, f ≈ t^0.6), so a steady-rate ETA is
    60 % short at a quarter; each end is extrapolated from the last half of
    the run so far (see `_left`)."""

    WINDOW = 0.5

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.last_print = -1.0
        # (elapsed s, fraction of simulated time, fraction of the flows' bytes or None)
        self.history: list[tuple[float, float, float | None]] = []
        self.flow_bytes = None

    def sample(self, sim, elapsed: float) -> None:
        if self.flow_bytes is None:
            self.flow_bytes = sim.flow_bytes_total if sim.flows_total else 0
        frac_time = min(sim.now_ps / max(sim.stop_ps, 1), 1.0)
        # Retransmitted payload counts twice; the cap keeps the bar sane.
        frac_work = min(sim.payload_arrived / self.flow_bytes, 1.0) if self.flow_bytes else None
        self.history.append((elapsed, frac_time, frac_work))

    def _at(self, t: float, k: int) -> float:
        """Measure `k` at elapsed time `t`, interpolated in the history."""
        h = self.history
        lo, hi = 0, len(h) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if h[mid][0] < t:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return h[0][k] * t / h[0][0] if h[0][0] > 0 else h[0][k]
        (ta, fa), (tb, fb) = (h[lo - 1][0], h[lo - 1][k]), (h[lo][0], h[lo][k])
        return fa + (fb - fa) * (t - ta) / (tb - ta) if tb > ta else fb

    def _left(self, k: int) -> float:
        """Seconds until measure `k` of the history reaches 1. Over the last
        half of the run so far: the mean rate, and how the rate changes with
        time, rate ∝ t^b, b fitted by least squares to the log rates of eight
        slices (b = 0 steady, b < 0 slowing; rates, not progress, so a quick
        start does not read as slowing; eight slices, as progress comes in
        bursts). The rest of the work is integrated at that rate."""
        h = self.history
        t, now = h[-1][0], h[-1][k]
        if now >= 1.0:
            return 0.0
        t0 = t * (1 - self.WINDOW)
        f0 = self._at(t0, k)
        if t <= 0 or t0 <= 0 or now <= f0:
            return t * (1 - now) / now if now > 0 else float("inf")
        n = 8
        edges = [t0 + (t - t0) * i / n for i in range(n + 1)]
        fs = [self._at(x, k) for x in edges[:-1]] + [now]
        pts = [(math.log((edges[i] + edges[i + 1]) / 2), math.log((fs[i + 1] - fs[i]) / (edges[i + 1] - edges[i])))
               for i in range(n) if fs[i + 1] > fs[i]]
        b = 0.0
        # A trend from a handful of samples is noise: fit only on enough of them.
        if len(pts) >= 4 and sum(1 for x in h if x[0] >= t0) >= 16:
            mx = sum(p[0] for p in pts) / len(pts)
            my = sum(p[1] for p in pts) / len(pts)
            sxx = sum((p[0] - mx) ** 2 for p in pts)
            if sxx > 0:
                b = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
        a = 1 + min(max(b, -0.7), 0.5)
        rate, mid = (now - f0) / (t - t0), (t0 + t) / 2
        # ∫ from t to t+T of rate (s/mid)^(a−1) ds = 1 − now
        return (t**a + (1 - now) * a * mid ** (a - 1) / rate) ** (1 / a) - t

    def fraction(self) -> float:
        _, t, w = self.history[-1]
        return max(t, w or 0.0)

    def eta(self) -> float:
        left = self._left(1)
        if self.history[-1][2] is not None:
            left = min(left, self._left(2))
        return left

    def update(self, sim, done: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        elapsed = now - self.start
        self.sample(sim, elapsed)
        if not done and now - self.last_print < (0.2 if self.tty else 5.0):
            return
        self.last_print = now
        frac = 1.0 if done else self.fraction()
        rate = sim.events / elapsed if elapsed > 0 else 0.0
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        line = (
            f"[{bar}] {frac * 100:5.1f}%  sim {sim.now_ps / 1e9:9.3f} ms  "
            f"flows {sim.flows_done}/{sim.flows_total}  {rate / 1e6:5.2f} M events/s  "
            f"elapsed {_fmt_secs(elapsed)}  ETA {'   0s' if done else _fmt_secs(self.eta()) if frac >= 0.01 else '   --'}"
        )
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if done else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _as_scenario(scenario, overrides: dict) -> LoadedScenario:
    """A LoadedScenario from a LoadedScenario, a dict or a path, with dotted
    `overrides` (``{"cc.algorithm": "hpcc", "workload.flows[0].size": "1MB"}``)."""
    import copy
    import os

    from rdmalab.scenario import ScenarioError, load_scenario, scenario_from_dict

    if isinstance(scenario, (str, os.PathLike)):
        scenario = load_scenario(scenario)
    if isinstance(scenario, dict):
        data, base, source = copy.deepcopy(scenario), Path("."), "<dict>"
    elif isinstance(scenario, LoadedScenario):
        if not overrides:
            return scenario
        data, source = copy.deepcopy(scenario.data), scenario.source
        base = Path(source).parent if source and not source.startswith("<") else Path(".")
        if scenario.figures:
            data["figures"] = scenario.figures
    else:
        raise ScenarioError(f"(scenario): expected a scenario file path, a mapping or a loaded scenario, "
                            f"not {type(scenario).__name__}")
    if overrides:
        from rdmalab.sweep.spec import SweepError, parse_key, set_key

        for key, value in overrides.items():
            try:
                set_key(data, parse_key(key, "override"), value, "override")
            except SweepError as e:
                raise ScenarioError(str(e)) from None
    return scenario_from_dict(data, base_dir=base, source=source)


def _check_run_arguments(out_dir, progress, parquet, threads) -> int:
    """`run`'s own arguments, before anything is read: the string "no" for
    `parquet` would be true and write Parquet, True threads would be 1, and
    -1 threads or an int `out_dir` failed with an OverflowError or a
    TypeError from deep inside, naming nothing. Returns `threads` as an int
    (a NumPy integer is taken as one)."""
    from rdmalab.scenario import ScenarioError, integer

    n = integer(threads)
    if n is None or n < 1:
        raise ScenarioError(f"threads: `{threads!r}` — allowed: a whole number, 1 (serial) or more")
    for key, value in (("progress", progress), ("parquet", parquet)):
        if not isinstance(value, bool):
            raise ScenarioError(f"{key}: `{value!r}` — allowed: True or False")
    if out_dir is not None and not isinstance(out_dir, (str, os.PathLike)):
        raise ScenarioError(f"out_dir: `{out_dir!r}` — allowed: a directory path (str or os.PathLike), or None")
    return n


def run(
    scenario,
    out_dir: str | Path | None = None,
    progress: bool = False,
    parquet: bool = True,
    threads: int = 1,
    **overrides,
) -> RunResult:
    """Run a scenario to its end and return its summary and tables.

    `scenario` is a file path, a mapping or a loaded scenario; keyword
    arguments with dotted keys override its values
    (``rdmalab.run("s.yaml", **{"cc.algorithm": "hpcc", "seed": 2})``).
    With `out_dir` the outputs are also written there. The tables are
    available in memory either way (``result.table("flows")``). With
    `threads` > 1 the run is split over that many threads; its outputs are
    the serial run's, byte for byte (docs/parallel.md says what it runs)."""
    return run_named(scenario, out_dir, "out_dir", progress, parquet, threads, overrides)


def run_named(scenario, out_dir, out_name: str, progress: bool = False, parquet: bool = True, threads: int = 1,
              overrides: dict | None = None) -> RunResult:
    """`run`, for a caller whose output directory has another name: an
    output directory that cannot be used is refused naming it as the
    caller's user wrote it (the command line's `--out`, not `out_dir`)."""
    threads = _check_run_arguments(out_dir, progress, parquet, threads)
    scenario = _as_scenario(scenario, overrides or {})
    factory, name = scenario.controller or (None, None)
    sim = _core.Simulation(scenario.to_json(), factory, name, threads)
    late = late_starts_warning(*sim.late_starts, sim.stop_ps)
    if late:
        # Not only with progress: a quiet run, or one from Python, that
        # leaves flows out says so as well.
        warnings.warn(late, ScenarioWarning, stacklevel=3)
    for inert in sim.warnings:
        # A setting that does nothing here (it needs another key): said
        # before the run, like the late starts.
        warnings.warn(inert, ScenarioWarning, stacklevel=3)
    if out_dir is not None:
        # Before the run: an output directory that cannot take the files is
        # found now, not after the simulation; an earlier run's files go.
        cleared = prepare_out_dir(out_dir, out_name)
        if cleared and progress:
            print(f"rdmalab: {out_dir}: removed {cleared} file{'s' if cleared != 1 else ''} of an earlier run",
                  file=sys.stderr)
        if sim.pcap_configured:
            sim.open_pcap(str(Path(out_dir) / "packets.pcap"))
    elif sim.pcap_configured:
        from rdmalab.scenario import ScenarioError

        raise ScenarioError(
            "records.pcap: writes packets.pcap into the output directory; give one "
            "(rdmalab.run(..., out_dir=...) or --out), or leave records.pcap out"
        )
    bar = _Progress(progress)
    t0 = time.perf_counter()
    steps = _PROGRESS_STEPS if threads == 1 else _PARALLEL_PROGRESS_STEPS
    step = max(sim.stop_ps // steps, 1)
    state = "running"
    target = 0
    # fct.txt grows as flows finish, as ns-3's does; the tables come at the end.
    fct = Path(out_dir) / "fct.txt" if out_dir is not None else None
    fct_done = sim.append_fct(str(fct), 0) if fct is not None else 0
    try:
        while state == "running":
            target = min(target + step, sim.stop_ps)
            state = sim.run_until(target)
            if fct is not None:
                fct_done = sim.append_fct(str(fct), fct_done)
            bar.update(sim)
    except (KeyboardInterrupt, _core.RunError) as e:
        # What the run finished is kept: the tables as far as they go, and a
        # summary that says how the run ended (and why, if it failed).
        if out_dir is not None:
            summary = dict(sim.summary())
            summary["end"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            if isinstance(e, _core.RunError):
                summary["error"] = str(e)
            sim.write_tables(str(out_dir))
            # No wall time in the file: summary.json holds no wall-clock
            # figures, so a failed run's files, too, are the same every time.
            write_outputs(Path(out_dir), summary, scenario, parquet=parquet)
            e.rdmalab_saved = (Path(out_dir), dict(summary, wall_seconds=time.perf_counter() - t0))
        raise
    wall = time.perf_counter() - t0
    bar.update(sim, done=True)
    summary = dict(sim.summary())
    out = None
    if out_dir is not None:
        out = Path(out_dir)
        sim.write_tables(str(out))
        write_outputs(out, summary, scenario, parquet=parquet)
    summary["wall_seconds"] = wall
    return RunResult(summary=summary, out_dir=out, wall_seconds=wall, _sim=sim)
