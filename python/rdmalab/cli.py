"""The `rdmalab` command line."""

from __future__ import annotations

import argparse
import importlib.util
import signal
import sys
from pathlib import Path

from rdmalab import _core
from rdmalab._core import RunError, ScenarioError


def _percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summary_table(summary: dict, out_dir: Path | None) -> str:
    """A human-readable table of what a run did."""
    rows = []
    sim_ms = summary["sim_time_ps"] / 1e9
    wall = summary.get("wall_seconds", 0.0)
    rows.append(("scenario", f"{summary['name']} (seed {summary['seed']}, cc {summary['cc']})"))
    rows.append(("ended", f"{summary['end']} at {sim_ms:.3f} ms simulated"))
    if wall > 0:
        rows.append(("wall time", f"{wall:.2f} s  ({summary['events'] / wall / 1e6:.2f} M events/s, "
                                   f"{summary['switch_packet_hops'] / wall / 1e6:.2f} M packet-hops/s)"))
    rows.append(("flows", f"{summary['flows_completed']} of {summary['flows_total']} completed"))
    if out_dir is not None and summary["flows_completed"] > 0:
        from rdmalab.outputs import read_table

        flows = read_table(out_dir, "flows")
        sd = flows.column("slowdown").to_pylist()
        fct = [x / 1e6 for x in flows.column("fct_ps").to_pylist()]
        rows.append(("FCT slowdown", f"p50 {_percentile(sd, 0.5):.2f}  p95 {_percentile(sd, 0.95):.2f}  "
                                     f"p99 {_percentile(sd, 0.99):.2f}  max {max(sd):.2f}"))
        rows.append(("FCT", f"p50 {_percentile(fct, 0.5):.2f} us  p99 {_percentile(fct, 0.99):.2f} us"))
    if summary["apps"]:
        rows.append(("applications", f"{summary['apps']} perftest-like QPs (see apps.csv)"))
    sent = summary["data_payload_sent_bytes"]
    rows.append(("payload sent", f"{sent / 1e6:.3f} MB ({summary['retransmitted_packets']} packets retransmitted, "
                                 f"{summary['timeouts']} timeouts)"))
    rows.append(("drops", f"{summary['dropped_frames']} frames ({summary['data_payload_dropped_bytes']} payload bytes)"))
    rows.append(("PFC", f"{summary['pfc_pauses']} pauses, {summary['pfc_resumes']} resumes"))
    rows.append(("ECN / CNP", f"{summary['ecn_marked_packets']} marked, {summary['cnps_sent']} CNPs"))
    ok = sent == (summary["data_payload_arrived_bytes"] + summary["data_payload_dropped_bytes"]
                  + summary["data_payload_in_network_bytes"])
    rows.append(("conservation", "sent = arrived + dropped + in network" + ("" if ok else "  ** VIOLATED **")))
    if out_dir is not None:
        rows.append(("outputs", str(out_dir)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def cmd_run(args) -> int:
    from rdmalab.runner import run
    from rdmalab.scenario import load_scenario

    overrides = {"seed": args.seed} if args.seed is not None else None
    scenario = load_scenario(args.scenario, overrides)
    result = run(scenario, out_dir=args.out, progress=not args.quiet, parquet=not args.no_parquet)
    print(summary_table(result.summary, result.out_dir))
    return 0


def _is_sweep_file(path) -> bool:
    import yaml

    from rdmalab.sweep.spec import is_sweep_file

    try:
        return is_sweep_file(yaml.safe_load(Path(path).read_text()))
    except (OSError, yaml.YAMLError):
        return False  # the scenario loader reports it


def cmd_validate(args) -> int:
    from rdmalab.runner import validate
    from rdmalab.scenario import load_scenario
    from rdmalab.sweep import SweepError, load_sweep

    status = 0
    for path in args.scenarios:
        try:
            if _is_sweep_file(path):
                sweep = load_sweep(path)
                print(f"{path}: ok — sweep `{sweep.name}` of {len(sweep.runs)} runs ({sweep.shape()}), "
                      f"every scenario valid")
                continue
            info = validate(load_scenario(path))
        except (ScenarioError, SweepError) as e:
            print(f"{path}: refused\n{e}", file=sys.stderr)
            status = 1
            continue
        print(
            f"{path}: ok — {info['hosts']} hosts, {info['nodes'] - info['hosts']} switches, "
            f"{info['links']} links, {info['flows']} flows, {info['apps']} applications, "
            f"cc {info['cc']}, {info['duration_ps'] / 1e9:g} ms"
        )
    return status


def cmd_sweep(args) -> int:
    from rdmalab.sweep import export_slurm, load_sweep, run_sweep
    from rdmalab.sweep.spec import describe_params

    sweep = load_sweep(args.sweep)  # expanded and validated before anything is written
    if args.dry_run:
        print(f"sweep {sweep.name}: {len(sweep.runs)} runs ({sweep.shape()}), every scenario valid")
        for r in sweep.runs:
            print(f"  {r.index:4d}  {r.run_id}  {describe_params(r.params)}")
        return 0
    if args.backend == "slurm":
        script = export_slurm(sweep, args.out, sbatch_options=args.sbatch)
        todo = len((script.parent / "pending.txt").read_text().split())
        print(f"wrote {script} ({todo} of {len(sweep.runs)} runs to do); submit it with: sbatch {script}")
        return 0
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        print("rdmalab: the Ray backend needs Ray: pip install 'rdmalab[ray]'", file=sys.stderr)
        return 2
    # `kill PID` (and a batch system's time limit) stops a sweep like Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        outcome = run_sweep(sweep, args.out, backend=args.backend, workers=args.workers, address=args.address,
                            retry_failed=args.retry_failed, progress=not args.quiet)
    except KeyboardInterrupt:
        print(f"\nrdmalab: sweep interrupted; finished runs are kept in {args.out}. "
              f"Run the same command again to run the rest.", file=sys.stderr)
        return 130
    done = sum(r["status"] == "done" for r in outcome.rows)
    print(f"sweep {sweep.name}: {done} of {len(outcome.rows)} runs done ({outcome.ran} run now, "
          f"{outcome.resumed} finished before), {outcome.failed} failed; manifest {Path(args.out) / 'manifest.jsonl'}")
    for r in outcome.rows:
        if r["status"] == "failed":
            print(f"  failed: run {r['index']} {r['run_id']} {describe_params(r['params'])}: {r['error']}")
    return 1 if outcome.failed else 0


def cmd_sweep_task(args) -> int:
    from rdmalab.sweep import run_task

    rec = run_task(args.dir, args.index)
    print(f"run {args.index}: {rec['status']}" + (f" ({rec['error']})" if rec["error"] else ""))
    return 0 if rec["status"] == "done" else 1


def _time_arg(text):
    from rdmalab.analysis import parse_time_ps

    if text is None:
        return None
    try:
        return parse_time_ps(text)
    except ValueError as e:
        raise SystemExit(f"rdmalab: {e}") from None


def slowdown_text(sd, cols: list[str], results) -> str:
    """The slowdown-by-size table, one block per group."""
    from rdmalab.plots import group_label

    qcols = [c for c in sd.columns if c.startswith("p") and c[1:2].isdigit()]
    parts = sd.partition_by(cols, maintain_order=True, as_dict=True) if cols else {(): sd}
    out = []
    for key, g in parts.items():
        label = group_label(dict(zip(cols, key)), cols, results.name)
        out.append(f"{label}  ({g['flows'].sum()} flows)")
        out.append(f"  {'bucket':>6}  {'size min':>10}  {'size max':>10}  {'flows':>6}  {'mean':>7}  "
                   + "  ".join(f"{c:>7}" for c in qcols))
        for r in g.iter_rows(named=True):
            out.append(f"  {r['bucket']:>6}  {r['size_min_bytes']:>10}  {r['size_max_bytes']:>10}  {r['flows']:>6}  "
                       f"{r['mean']:>7.3f}  " + "  ".join(f"{r[c]:>7.3f}" for c in qcols))
    return "\n".join(out)


def cmd_analyze(args) -> int:
    from rdmalab.analysis import slowdown_by_size
    from rdmalab.plots import group_columns
    from rdmalab.sweep import Results

    results = Results(args.path)
    cols = args.by if args.by is not None else group_columns(results)
    unknown = [c for c in cols if c not in results.param_names and c != "run_id"]
    if unknown:
        raise SystemExit(f"rdmalab: --by `{unknown[0]}`: not a parameter of {args.path}; "
                         f"allowed: run_id{''.join(', ' + p for p in results.param_names)}")
    flows = results.table("flows")
    sd = slowdown_by_size(flows, by=cols, buckets=args.buckets,
                          start_ps=_time_arg(args.start), end_ps=_time_arg(args.end))
    if args.csv:
        sys.stdout.write(sd.write_csv())
        return 0
    done = len(results.done())
    print(f"FCT slowdown by flow size: {results.name}, {done} finished run{'s' if done != 1 else ''}, "
          f"{sd['flows'].sum()} of {flows.height} flows (start window {args.start or 'start'} to {args.end or 'end'}), "
          f"{args.buckets} buckets of equal flow count, nearest-rank quantiles, sizes in bytes")
    print(slowdown_text(sd, cols, results))
    return 0


def cmd_report(args) -> int:
    from rdmalab.report import write_report

    path = write_report(args.path, args.out, start_ps=_time_arg(args.start), end_ps=_time_arg(args.end))
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB; opens offline in any browser)")
    return 0


def cmd_plot(args) -> int:
    from rdmalab.plots import write_plots

    paths = write_plots(args.path, args.out, fmt=args.format, start_ps=_time_arg(args.start), end_ps=_time_arg(args.end))
    print(f"wrote {len(paths)} plots to {args.out}: " + ", ".join(p.name for p in paths))
    return 0


def cmd_bench(args) -> int:
    from rdmalab.bench import main as bench_main

    return bench_main(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rdmalab", description=__doc__)
    parser.add_argument("--version", action="version", version=f"rdmalab {_core.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run a scenario and write its outputs")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--no-parquet", action="store_true", help="write CSV only")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("validate", help="check scenarios without running them")
    p.add_argument("scenarios", nargs="+")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("sweep", help="run every scenario of a sweep file (resumes an interrupted sweep)")
    p.add_argument("sweep", help="sweep YAML file (docs/sweeps.md)")
    p.add_argument("--out", required=True, help="sweep directory: manifest, plan and one directory per run")
    from rdmalab.sweep import BACKENDS

    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local process pool (default), a Ray cluster, or write a SLURM array job script")
    p.add_argument("--workers", type=int, help="local: processes; ray without --address: CPUs of the local "
                                               "Ray instance (default: the machine's cores)")
    p.add_argument("--address", help="ray: the cluster to connect to (e.g. `auto`, `ray://head:10001`); "
                                     "default: start a local one")
    p.add_argument("--retry-failed", action="store_true", help="run failed runs again (they are kept otherwise)")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="slurm: an extra #SBATCH line, e.g. --sbatch=--partition=short (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="expand and validate, list the runs, run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("sweep-task", help="run one run of a sweep directory's plan (what a SLURM array task does)")
    p.add_argument("dir", help="sweep directory")
    p.add_argument("index", type=int, help="the run's index in plan.jsonl")
    p.set_defaults(func=cmd_sweep_task)

    p = sub.add_parser("analyze", help="print FCT slowdown by flow-size bucket for a run or sweep directory")
    p.add_argument("path", help="a run directory (rdmalab run --out) or a sweep directory (rdmalab sweep --out)")
    p.add_argument("--by", nargs="*", help="columns to group by (default: every parameter but seed; "
                                           "`--by run_id` for one table per run)")
    p.add_argument("--start", help="drop flows that started before this time (warm-up), e.g. 1ms")
    p.add_argument("--end", help="drop flows that started at or after this time (tail), e.g. 9ms")
    p.add_argument("--buckets", type=int, default=20, help="flow-size buckets of equal flow count (default 20: 5%% each)")
    p.add_argument("--csv", action="store_true", help="write the table as CSV to stdout")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("report", help="write a self-contained HTML report of a run or sweep directory")
    p.add_argument("path", help="a run or sweep directory")
    p.add_argument("--out", help="HTML file (default: PATH/report.html)")
    p.add_argument("--start", help="slowdown: only flows that started at or after this time")
    p.add_argument("--end", help="slowdown: only flows that started before this time")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("plot", help="draw the standard plots of a run or sweep directory as PNG or SVG")
    p.add_argument("path", help="a run or sweep directory")
    p.add_argument("--out", required=True, help="directory for the image files")
    p.add_argument("--format", choices=("png", "svg"), default="png")
    p.add_argument("--start", help="slowdown: only flows that started at or after this time")
    p.add_argument("--end", help="slowdown: only flows that started before this time")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("bench", help="measure speed and memory on the benchmark scenarios")
    p.add_argument("scenarios", nargs="*", help="scenario files (default: benchmarks/*.yaml)")
    p.add_argument("--repeat", type=int, default=1, help="runs per scenario; the best is reported")
    p.set_defaults(func=cmd_bench)

    args = parser.parse_args(argv)
    from rdmalab.sweep import NotResults, StoreBusy, SweepError

    try:
        return args.func(args)
    except ScenarioError as e:
        print(f"rdmalab: scenario refused\n{e}", file=sys.stderr)
        return 2
    except SweepError as e:
        print(f"rdmalab: sweep refused, nothing was run\n{e}", file=sys.stderr)
        return 2
    except StoreBusy as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 4
    except NotResults as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 2
    except RunError as e:
        print(f"rdmalab: run failed: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("rdmalab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
