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
        raise SystemExit(f"rdmalab: benchmark {path} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(args) -> int:
    paths = [Path(p) for p in args.scenarios] or _default_scenarios(getattr(args, "large", False))
    if not paths:
        print("no benchmark scenarios given and none in ./benchmarks", file=sys.stderr)
        return 2
    from rdmalab.runner import validate
    from rdmalab.scenario import load_scenario

    for p in paths:  # a bad scenario is refused here, not as a child's traceback
        validate(load_scenario(p))
    threads = getattr(args, "threads", None)
    if threads:
        runs = [(p, t) for p in paths for t in threads]
    else:
        # Serial rows, and (b) on two threads: the parallel mode beside the serial run.
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


# Loading many flows (issue 16): the same N flows given four ways, each timed
# in a fresh child process: read (the front end's loader), validate (the
# core's check, as `rdmalab validate`) and build (the core making the run).
_LOAD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from rdmalab import _core
from rdmalab.scenario import load_scenario
t1 = time.perf_counter()
kind, path = sys.argv[1], sys.argv[2]
if kind == "hpcc":
    from pathlib import Path
    from rdmalab.hpcc import convert
    conv = convert(path)
    sc = conv.load(Path(path).parent, path)
else:
    sc = load_scenario(path)
t2 = time.perf_counter()
info = _core.validate(sc.to_json())
t3 = time.perf_counter()
sim = _core.Simulation(sc.to_json())
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "validate_s": t3 - t2, "build_s": t4 - t3,
                  "flows": info["flows"]}))
"""

_LOAD_HEAD = """\
name: load-{n}-flows
duration: 1ms
topology: {{kind: hpcc_file, builtin: hpcc-fat-tree-320-hosts}}
records: {{sample_interval: off}}
workload:
"""


def write_load_inputs(d: Path, n: int, hpcc_example: Path) -> list[tuple[str, str, Path]]:
    """N flows over the 320-host HPCC fat tree, as YAML (one flow per line,
    and block style), as a CSV flow_file, and as ns-3's flow.txt in a copy of
    `hpcc_example` (examples/hpcc/mix, its DCQCN config): (label, child
    kind, path) for each."""
    import random
    import shutil

    rng = random.Random(1)
    flows = []
    for i in range(n):
        s = rng.randrange(320)
        flows.append((s, (s + 1 + rng.randrange(319)) % 320, rng.randrange(1000, 100_000), i))
    head = _LOAD_HEAD.format(n=n)
    (d / "flows.yaml").write_text(head + "  flows:\n" + "".join(
        f"    - {{src: h{s}, dst: h{t}, size: {b}B, start: {i}ps}}\n" for s, t, b, i in flows))
    (d / "flows-block.yaml").write_text(head + "  flows:\n" + "".join(
        f"    - src: h{s}\n      dst: h{t}\n      size: {b}B\n      start: {i}ps\n" for s, t, b, i in flows))
    (d / "flows.csv").write_text("src,dst,size,start\n" + "".join(f"h{s},h{t},{b}B,{i}ps\n" for s, t, b, i in flows))
    (d / "flow-file.yaml").write_text(head + "  flow_file: flows.csv\n")
    mix = d / "mix"
    shutil.copytree(hpcc_example, mix)
    (mix / "flow.txt").write_text(f"{n}\n" + "".join(f"{s} {t} 3 100 {b} {2 + i * 1e-12:.12f}\n" for s, t, b, i in flows))
    config = (mix / "config-dcqcn.txt").read_text()
    (mix / "config-load.txt").write_text(config.replace("SIMULATOR_STOP_TIME 2.1", "SIMULATOR_STOP_TIME 2.001"))
    return [("YAML flows, one a line", "yaml", d / "flows.yaml"),
            ("YAML flows, block style", "yaml", d / "flows-block.yaml"),
            ("CSV flow_file", "yaml", d / "flow-file.yaml"),
            ("ns-3 flow.txt (hpcc run)", "hpcc", mix / "config-load.txt")]


def load_main(n: int, repeat: int = 1) -> int:
    """Print how long N flows take to read, validate and build, per input form."""
    import tempfile

    example = Path.cwd() / "examples" / "hpcc" / "mix"
    if not (example / "config-dcqcn.txt").is_file():
        print(f"--load: needs {example} (run it from rdmalab's source directory)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rdmalab-bench-load-") as tmp:
        inputs = write_load_inputs(Path(tmp), n, example)
        header = f"{'input':<28} {'flows':>8} {'read s':>7} {'validate s':>11} {'build s':>8} {'read+validate s':>16}"
        print(header)
        print("-" * len(header))
        for label, kind, path in inputs:
            best = None
            for _ in range(max(1, repeat)):
                # ns-3's config names its files relative to where it runs: the directory above mix/.
                out = subprocess.run([sys.executable, "-c", _LOAD_CHILD, kind, str(path)],
                                     capture_output=True, text=True, check=False, cwd=tmp)
                if out.returncode != 0:
                    raise RuntimeError(f"loading {path} failed:\n{out.stderr}")
                r = json.loads(out.stdout.strip().splitlines()[-1])
                if best is None or r["read_s"] + r["validate_s"] < best["read_s"] + best["validate_s"]:
                    best = r
            r = best
            print(f"{label:<28} {r['flows']:>8} {r['read_s']:>7.2f} {r['validate_s']:>11.2f} {r['build_s']:>8.2f} "
                  f"{r['read_s'] + r['validate_s']:>16.2f}")
    print("\nread: the scenario file to the JSON the core takes (YAML, CSV, or ns-3's files converted);")
    print("validate: the core's checks, as `rdmalab validate`; build: the core making the run, as `rdmalab run`.")
    print("Interpreter start and imports (about 0.5 s) come on top of each for a command.")
    return 0
