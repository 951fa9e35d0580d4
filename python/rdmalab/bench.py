"""Speed and memory benchmark.

Each scenario runs in a fresh child process (so peak memory is its own) with
no outputs written; the child reports wall time, events, switch
packet-hops, simulated time and its peak resident memory. The figures are
printed, never asserted: performance is measured, not tested.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time

def peak_kb():
    # VmHWM is per address space, so it starts afresh at exec; ru_maxrss would
    # carry over the parent's peak on Linux.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

from rdmalab import _core
from rdmalab.scenario import load_scenario
sc = load_scenario(sys.argv[1])
sc.data.setdefault("records", {})["sample_interval"] = "off"
base_kb = peak_kb()
t0 = time.perf_counter()
sim = _core.Simulation(sc.to_json(), threads=int(sys.argv[2]))
t1 = time.perf_counter()
sim.run_until(sim.stop_ps)
t2 = time.perf_counter()
s = sim.summary()
print(json.dumps({
    "build_s": t1 - t0, "run_s": t2 - t1, "events": s["events"],
    "hops": s["switch_packet_hops"], "sim_ps": s["sim_time_ps"],
    "flows": s["flows_total"], "done": s["flows_completed"],
    "peak_kb": peak_kb(), "base_kb": base_kb,
}))
"""


def _default_scenarios(large: bool = False) -> list[Path]:
    """benchmarks/*.yaml, and with `large` benchmarks/large/*.yaml: fabrics
    that take minutes and GBs (the k = 64 fat tree), measured on request."""
    here = Path.cwd() / "benchmarks"
    found = sorted(here.glob("*.yaml"))
    if large:
        found += sorted((here / "large").glob("*.yaml"))
    return found


def bench_one(path: Path, threads: int = 1) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(threads)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"benchmark {path} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(args) -> int:
    paths = [Path(p) for p in args.scenarios] or _default_scenarios(getattr(args, "large", False))
    if not paths:
        print("no benchmark scenarios given and none in ./benchmarks", file=sys.stderr)
        return 2
    threads = getattr(args, "threads", None)
    if threads:
        runs = [(p, t) for p in paths for t in threads]
    else:
        # Serial rows, and the parallel mode on (b) (issue 16's target: 1.6x on two cores).
        runs = [(p, 1) for p in paths] + [(p, 2) for p in paths if p.stem.startswith("b-")]
    header = (
        f"{'scenario':<34} {'threads':>7} {'flows':>12} {'sim ms':>8} {'wall s':>8} {'M events/s':>11} "
        f"{'M pkt-hops/s':>13} {'sim s / wall s':>15} {'peak MB':>8} {'sim MB':>7}"
    )
    print(header)
    print("-" * len(header))
    for p, t in runs:
        best = None
        for _ in range(max(1, args.repeat)):
            r = bench_one(p, t)
            if best is None or r["run_s"] < best["run_s"]:
                best = r
        r = best
        wall = r["run_s"]
        print(
            f"{p.stem:<34} {t:>7} {str(r['done']) + '/' + str(r['flows']):>12} {r['sim_ps'] / 1e9:>8.3f} {wall:>8.2f} "
            f"{r['events'] / wall / 1e6:>11.2f} {r['hops'] / wall / 1e6:>13.2f} "
            f"{r['sim_ps'] / 1e12 / wall:>15.2e} {r['peak_kb'] / 1024:>8.1f} "
            f"{(r['peak_kb'] - r['base_kb']) / 1024:>7.1f}"
        )
    print("\npeak MB: peak resident memory of the child process (Python, the extension and the run);")
    print("sim MB: what the run added on top of the interpreter and imports.")
    return 0
