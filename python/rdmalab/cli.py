"""The `rdmalab` command line."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import signal
import sys
from pathlib import Path

from rdmalab import _core
from rdmalab._core import RunError, ScenarioError
from rdmalab.quantiles import nearest_rank


def _flow_columns(csv_path: Path, *names: str) -> list[list[float]]:
    """Columns of the flows table the run just wrote, as numbers, read with
    the csv module: the summary needs two columns, not pyarrow (0.3 s to
    import). Rows as lists, not dicts: 0.13 s for 100,000 flows, not 0.29 s."""
    import csv

    with open(csv_path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        at = [header.index(n) for n in names]
        cols: list[list[float]] = [[] for _ in names]
        for row in rows:
            for col, i in zip(cols, at):
                col.append(float(row[i]))
    return cols


def summary_table(summary: dict, out_dir: Path | None, stop_ps: int | None = None, stop_given: str | None = None) -> str:
    """A human-readable table of what a run did. `stop_ps`: the stop time the run was given
    (`duration`), and `stop_given` how the input said it (e.g. `SIMULATOR_STOP_TIME 2.1`)."""
    from rdmalab.units import fmt_time, plural

    rows = []
    wall = summary.get("wall_seconds", 0.0)
    rows.append(("scenario", f"{summary['name']} (seed {summary['seed']}, cc {summary['cc']})"))
    given = "" if stop_ps is None else f"{fmt_time(stop_ps)}" + (f" ({stop_given})" if stop_given else "")
    end, sim = summary["end"], fmt_time(summary["sim_time_ps"])
    if end == "stop_time" and stop_ps is not None:
        ended = f"stop_time: ran to the stop time it was given, {given}"
    elif end == "all_flows_done" and stop_ps is not None:
        ended = f"all_flows_done at {sim} simulated, before the stop time {given}"
    else:
        ended = f"{end} at {sim} simulated" + (f" (stop time {given})" if given else "")
    rows.append(("ended", ended))
    if wall > 0:
        rows.append(("wall time", f"{wall:.2f} s  ({summary['events'] / wall / 1e6:.2f} M events/s, "
                                   f"{summary['switch_packet_hops'] / wall / 1e6:.2f} M packet-hops/s)"))
    rows.append(("flows", f"{summary['flows_completed']} of {summary['flows_total']} completed"))
    if out_dir is not None and summary["flows_completed"] > 0:
        sd, fct_ps = _flow_columns(Path(out_dir) / "flows.csv", "slowdown", "fct_ps")
        fct = [x / 1e6 for x in fct_ps]
        # Nearest-rank quantiles (rdmalab.quantiles), as `rdmalab analyze`, tenants.csv and the
        # figures compute them: the summary and every table give a run the same p50 and p99.
        rows.append(("FCT slowdown", f"p50 {nearest_rank(sd, 0.5):.2f}  p95 {nearest_rank(sd, 0.95):.2f}  "
                                     f"p99 {nearest_rank(sd, 0.99):.2f}  max {max(sd):.2f}"))
        rows.append(("FCT", f"p50 {fmt_time(nearest_rank(fct, 0.5) * 1e6)}  p99 {fmt_time(nearest_rank(fct, 0.99) * 1e6)}"))
    if summary["apps"]:
        rows.append(("applications", f"{plural(summary['apps'], 'perftest-like QP')} (see apps.csv)"))
    sent = summary["data_payload_sent_bytes"]
    rows.append(("payload sent", f"{sent / 1e6:.3f} MB ({plural(summary['retransmitted_packets'], 'packet')} "
                                 f"retransmitted, {plural(summary['timeouts'], 'timeout')})"))
    rows.append(("drops", f"{plural(summary['dropped_frames'], 'frame')} "
                          f"({plural(summary['data_payload_dropped_bytes'], 'payload byte')})"))
    rows.append(("PFC", f"{plural(summary['pfc_pauses'], 'pause')}, {plural(summary['pfc_resumes'], 'resume')}"))
    rows.append(("ECN / CNP", f"{summary['ecn_marked_packets']} marked, {plural(summary['cnps_sent'], 'CNP')}"))
    ok = sent == (summary["data_payload_arrived_bytes"] + summary["data_payload_dropped_bytes"]
                  + summary["data_payload_in_network_bytes"])
    rows.append(("conservation", "sent = arrived + dropped + in network" + ("" if ok else "  ** VIOLATED **")))
    if "pcap_frames" in summary:
        rows.append(("capture", f"{summary['pcap_frames']} frames in packets.pcap "
                                f"({summary['pcap_ecn_ce_frames']} ECN CE); open it in Wireshark"))
    if out_dir is not None:
        rows.append(("outputs", str(out_dir)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def cmd_run(args) -> int:
    from rdmalab.runner import run_named
    from rdmalab.scenario import load_scenario

    from rdmalab.outputs import refuse_foreign_run_dir

    overrides, labels = _overrides(args.set, args.seed)
    _refuse_sweep_file(args.scenario)
    _name_lengths(args.out, "--out")
    refuse_foreign_run_dir(args.out)
    # `kill PID` (and a batch system's time limit) stops a run like Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    _end_on_second_interrupt(args.out)
    scenario = load_scenario(args.scenario, overrides, labels)
    result = run_named(scenario, args.out, "--out", progress=not args.quiet, parquet=not args.no_parquet,
                       threads=args.threads)
    print(summary_table(result.summary, result.out_dir, stop_ps=_stop_ps(result), stop_given="duration"))
    _draw_case_figures(args.out, scenario.figures or [])
    return 0


def _overrides(pairs: list[str] | None, seed: int | None = None) -> tuple[dict | None, dict[str, str]]:
    """`--set KEY=VALUE` (any number) and `--seed` as `load_scenario`'s
    overrides, with what each is called in an error (`--set KEY=VALUE` as
    typed: a key that names no place in the scenario is the user's `--set`,
    not an anonymous override). The key is dotted as in sweeps (`cc.algorithm`,
    `workload.flows[0].size`); the value is read as YAML reads it in a
    scenario file (`5ms`, `0.5`, `[1, 2]`, `{algorithm: hpcc}`), and `null`
    removes the key."""
    import yaml

    from rdmalab import yamlio

    out: dict = {}
    labels: dict[str, str] = {}
    for item in pairs or []:
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            # The shell passed bytes that are not UTF-8 (Python keeps them as
            # surrogates, which YAML and the terminal cannot take).
            shown = item.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise ScenarioError(f"--set `{shown}`: not UTF-8 text; allowed: KEY=VALUE in UTF-8") from None
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ScenarioError(f"--set `{item}`: allowed: KEY=VALUE, the key dotted as in sweeps "
                                f"(`--set cc.algorithm=hpcc`)")
        if not text.strip():
            raise ScenarioError(f"--set {key}: no value after `=`; allowed: a value as in the scenario file "
                                f"(`null` removes the key)")
        if key in out:
            raise ScenarioError(f"--set {key}: given twice; allowed: each key once")
        try:
            out[key] = yamlio.load(text)
        except yaml.YAMLError as e:
            raise ScenarioError(f"--set {key}: `{text}` is not a YAML value ({e})") from None
        labels[key] = f"--set {key}={text.strip()}"
    if seed is not None:
        if "seed" in out:
            raise ScenarioError("--seed and --set seed=... both given; allowed: one of them")
        out["seed"] = seed
        labels["seed"] = f"--seed {seed}"
    return out or None, labels


def _end_on_second_interrupt(out) -> None:
    """Let a second Ctrl-C (or SIGTERM) end a run that does not stop.

    Python acts on Ctrl-C between bytecodes only, so a run stops on it when
    the core hands back control: at once between simulation steps, or as
    soon as a Python controller's code runs. A C controller stuck in a loop
    never hands it back, and Ctrl-C would do nothing. Python's C-level
    handler still writes each signal to the wakeup fd at once, and a native
    thread that needs no GIL reads it (`_core.watch_interrupts`): after the
    first interrupt it says that a second one ends the run at once, and the
    second ends the process with status 130, saving nothing more."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread (cli.main called from a thread): Ctrl-C is not ours
        os.close(read)
        os.close(write)
        return
    _core.watch_interrupts(
        read,
        "rdmalab: stopping the run... (if it does not stop, as when a C controller is stuck in a loop, "
        "press Ctrl-C again to end it at once)\n",
        f"rdmalab: interrupted again: ended at once, without saving the run; the files in {out} may be "
        f"incomplete\n",
        1000,
    )


def _stop_ps(result) -> int | None:
    """The stop time a run was given (its scenario's duration)."""
    sim = getattr(result, "_sim", None)
    return None if sim is None else int(sim.stop_ps)


def _say_saved(e: BaseException) -> None:
    """After an interrupted or failed run: what of it was written, and where."""
    saved = getattr(e, "rdmalab_saved", None)
    if saved is None:
        return
    out, s = saved
    from rdmalab.units import fmt_time

    print(f"rdmalab: saved the run so far to {out}: {fmt_time(s['sim_time_ps'])} simulated, "
          f"{s['flows_completed']} of {s['flows_total']} flow{'s' if s['flows_total'] != 1 else ''} finished "
          f"(flows table), the samples taken; "
          f"summary.json says end: {s['end']}", file=sys.stderr)


def _top_keys(path) -> list | None:
    """The top-level keys of a YAML file; None if it cannot be read or parsed
    (the loader that runs next names the problem). Read off the lines of a
    block-style file without parsing it: a scenario of 100,000 flows took
    as long to parse for this as to load."""
    import re

    from rdmalab import yamlio
    from rdmalab.scenario import read_input

    try:  # read_input refuses devices, huge and binary files before reading them
        text = read_input(Path(path), "(scenario)")
        keys = re.findall(r"""^["']?([A-Za-z_][\w.-]*)["']?[ \t]*:""", text, re.M)
        if keys:
            return keys
        data = yamlio.load(text)
    except Exception:
        return None
    return list(data) if isinstance(data, dict) else []


def _refuse_sweep_file(path: str) -> None:
    """`rdmalab run` on a sweep file: say which command runs it."""
    if _is_sweep_file(path):
        raise ScenarioError(f"(scenario): `{path}` is a sweep file (it has `base`); "
                            f"run it with `rdmalab sweep {path} --out DIR`")


def _refuse_scenario_file(path: str) -> None:
    """`rdmalab sweep` on a scenario file: say which command runs it."""
    from rdmalab.sweep import SweepError

    keys = _top_keys(path)
    if keys is not None and "base" not in keys and ("topology" in keys or "workload" in keys):
        raise SweepError(f"`{path}` is a scenario, not a sweep file (it has no `base`); "
                         f"run it with `rdmalab run {path} --out DIR`")


def _refuse_foreign_sweep_dir(out: str) -> None:
    """`sweep --out`: a new or empty directory, or a sweep directory (resumed); nothing else."""
    from rdmalab.outputs import RUN_DIR_EXTRAS, OutputDirError, foreign_files
    from rdmalab.sweep.store import MANIFEST, PLAN, SWEEP

    p = Path(out)
    # A file on the way (`--out results.csv`, `--out file/sub`) would stop the
    # sweep at its first mkdir with an OS error; name it before anything runs.
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise OutputDirError(f"--out: `{q}` is a file; give a directory (created if missing)")
            break
    if not p.is_dir() or (p / SWEEP).exists() or (p / MANIFEST).exists():
        return
    other = foreign_files(p, {".lock", "runs", PLAN, "slurm"} | RUN_DIR_EXTRAS)
    if other:
        shown = ", ".join(other[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
        raise OutputDirError(f"--out: `{out}` is not empty and not a sweep directory (it holds {shown}); give a new "
                             f"or empty directory, or an earlier sweep's directory to resume or extend it")


def _draw_case_figures(out: str, names: list[str]) -> None:
    """Draw the case-study figures a scenario or sweep file names into OUT/plots."""
    from rdmalab.casestudies import remember, write_figures

    if not names:
        return
    remember(out, names)
    problems: list[str] = []
    paths = write_figures(out, names, Path(out) / "plots", problems=problems)
    for p in paths:
        print(f"  wrote {p}")
    for p in problems:
        print(f"rdmalab: warning: {p}", file=sys.stderr)


def cmd_figures(args) -> int:
    from rdmalab.casestudies import known

    for f in sorted(known().values(), key=lambda f: f.name):
        print(f"{f.name:<28} {f.paper}: {f.description}")
    return 0


def _finite_float(low: float | None = None, above: float | None = None, high: float | None = None):
    """An argparse type: a finite number, at least `low` or above `above`, at most `high`."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"`{text}` is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"`{text}` — allowed: a finite number")
        if low is not None and v < low:
            raise argparse.ArgumentTypeError(f"`{text}` — allowed: {low:g} or more")
        if above is not None and not v > above:
            raise argparse.ArgumentTypeError(f"`{text}` — allowed: more than {above:g}")
        if high is not None and v > high:
            raise argparse.ArgumentTypeError(f"`{text}` — allowed: at most {high:g}")
        return v
    return parse


def _int_between(low: int, high: int | None, allowed: str):
    """An argparse type: an integer from `low` to `high` (no bound: None)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"`{text}` is not an integer") from None
        if n < low or (high is not None and n > high):
            raise argparse.ArgumentTypeError(f"`{text}` — allowed: {allowed}")
        return n
    return parse


_positive_int = _int_between(1, None, "1 or more")
#: `--threads`: each thread is a partition of the fabric with its own queues,
#: so a count far past any machine's cores only costs memory.
_threads = _int_between(1, 1024, "1 to 1024")


def _buckets_arg(text: str):
    """`--buckets`: a number of equal-count buckets, or fixed size edges (a
    name such as `pfabric`, or sizes separated by commas)."""
    from rdmalab.analysis import size_edges

    if text.strip().isdigit():
        return _positive_int(text)
    try:
        return size_edges(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("buckets: ")) from None


def _buckets_text(buckets) -> str:
    """How a run of `analyze` names its buckets."""
    from rdmalab.units import fmt_size, plural

    if isinstance(buckets, tuple):
        return f"{plural(len(buckets) + 1, 'bucket')} at fixed edges {', '.join(fmt_size(e) for e in buckets)}"
    return f"{plural(buckets, 'bucket')} of equal flow count"


#: fct.txt's dport column.
_udp_port = _int_between(0, 65535, "a UDP port, 0 to 65535")


def _is_sweep_file(path) -> bool:
    """Whether `path` holds a sweep (a top-level `base`)."""
    keys = _top_keys(path)
    return keys is not None and "base" in keys


def cmd_validate(args) -> int:
    from rdmalab.units import plural
    from rdmalab.runner import late_starts_warning, validate
    from rdmalab.scenario import load_scenario
    from rdmalab.sweep import SweepError, load_sweep

    status = 0
    try:
        overrides, labels = _overrides(args.set)
    except ScenarioError as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 2
    for path in args.scenarios:
        try:
            if _is_sweep_file(path):
                if overrides:
                    raise ScenarioError("--set: a sweep file sets keys in its own `set:`; allowed: --set with "
                                        "scenario files")
                sweep = load_sweep(path)
                print(f"{path}: ok — sweep `{sweep.name}` of {plural(len(sweep.runs), 'run')} ({sweep.shape()}), "
                      f"every scenario valid")
                continue
            info = validate(load_scenario(path, overrides, labels))
        except (ScenarioError, SweepError) as e:
            print(f"{path}: refused\n{e}", file=sys.stderr)
            status = 1
            continue
        print(
            f"{path}: ok — {plural(info['hosts'], 'host')}, {plural(info['nodes'] - info['hosts'], 'switch', 'switches')}, "
            f"{plural(info['links'], 'link')}, {plural(info['flows'], 'flow')}, {plural(info['apps'], 'application')}, "
            f"cc {info['cc']}, {info['duration_ps'] / 1e9:g} ms"
        )
        late = late_starts_warning(info["late_flows"], info["late_apps"], info["duration_ps"])
        if late:
            print(f"{path}: warning: {late}", file=sys.stderr)
        for inert in info["warnings"]:
            print(f"{path}: warning: {inert}", file=sys.stderr)
    return status


def algorithms_markdown() -> str:
    """The reference of every built-in algorithm, generated from the core's declarations."""
    out = [
        "# Congestion-control algorithms",
        "",
        "Generated by `rdmalab algorithms --markdown` from the parameter tables each",
        "algorithm declares in `crates/rdmalab-core/src/algo/`; do not edit by hand.",
        "Select one with `cc: {algorithm: NAME, params: {...}}`; every parameter has",
        "the unit of its kind (rates like `40Mbps`, durations like `4us`, sizes like `64KB`).",
        "",
    ]
    for a in _core.algorithms():
        out += [f"## `{a['name']}`", "", a["summary"] + ".", ""]
        if a["needs"]:
            out += [f"Needs: {a['needs']}.", ""]
        if not a["params"]:
            out += ["No parameters.", ""]
            continue
        out += ["| parameter | unit | default | allowed | meaning | source of the default |", "|---|---|---|---|---|---|"]
        for p in a["params"]:
            out.append(
                f"| `{p['name']}` | {p['unit']} | `{p['default']}` | {p['min']} to {p['max']}"
                f"{'; not with `' + p['not_with'] + ': true`' if p.get('not_with') else ''} | {p['description']} | {p['source']} |"
            )
        out.append("")
    return "\n".join(out)


def cmd_algorithms(args) -> int:
    if args.markdown:
        print(algorithms_markdown())
        return 0
    algos = _core.algorithms()
    names = [a["name"] for a in algos] + ["python", "c"]
    if args.name is not None and args.name not in names:  # `""` (an unset shell variable) too
        print(f"rdmalab: no algorithm `{args.name}`; allowed: {', '.join(names)}", file=sys.stderr)
        return 2
    for a in algos:
        if args.name and a["name"] != args.name:
            continue
        print(f"{a['name']}: {a['summary']}" + (f"  [needs {a['needs']}]" if a["needs"] else ""))
        for p in a["params"]:
            print(f"    {p['name']:<22} {p['unit']:<9} default {p['default']:<12} {p['description']}")
    if args.name in (None, "python"):
        print("python: a controller written in Python: cc: {algorithm: python, class: file.py:Name, params: {...}}"
              " (subclass rdmalab.Controller; see docs/python-api.md and examples/python-controller.yaml)")
    if args.name in (None, "c"):
        print("c: a controller in C against DOCA PCC's device API: cc: {algorithm: c, source: algo.c, params: {...}}"
              " (see docs/c-controllers.md and examples/c/)")
    return 0


def cmd_sweep(args) -> int:
    from rdmalab.units import plural
    from rdmalab.sweep import export_slurm, load_sweep, run_sweep
    from rdmalab.sweep.spec import describe_params

    _refuse_scenario_file(args.sweep)
    overrides, _ = _overrides(args.set)
    sweep = load_sweep(args.sweep, overrides=overrides)  # expanded and validated before anything is written
    if args.dry_run:
        print(f"sweep {sweep.name}: {plural(len(sweep.runs), 'run')} ({sweep.shape()}), every scenario valid")
        for r in sweep.runs:
            print(f"  {r.index:4d}  {r.run_id}  {describe_params(r.params)}")
        return 0
    _name_lengths(args.out, "--out")
    _refuse_foreign_sweep_dir(args.out)
    if args.backend == "slurm":
        script = export_slurm(sweep, args.out, sbatch_options=args.sbatch, other_builds=args.other_builds)
        todo = len((script.parent / "pending.txt").read_text().split())
        print(f"wrote {script} ({todo} of {plural(len(sweep.runs), 'run')} to do); submit it with: sbatch {script}")
        return 0
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        print("rdmalab: the Ray backend needs Ray: pip install 'rdmalab[ray]'", file=sys.stderr)
        return 2
    # `kill PID` (and a batch system's time limit) stops a sweep like Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        outcome = run_sweep(sweep, args.out, backend=args.backend, workers=args.workers, address=args.address,
                            retry_failed=args.retry_failed, progress=not args.quiet,
                            other_builds=args.other_builds)
    except KeyboardInterrupt:
        print(f"\nrdmalab: sweep interrupted; finished runs are kept in {args.out}. "
              f"Run the same command again to run the rest.", file=sys.stderr)
        return 130
    done = sum(r["status"] == "done" for r in outcome.rows)
    print(f"sweep {sweep.name}: {done} of {plural(len(outcome.rows), 'run')} done ({outcome.ran} run now, "
          f"{outcome.resumed} finished before), {outcome.failed} failed; manifest {Path(args.out) / 'manifest.jsonl'}")
    for r in outcome.rows:
        if r["status"] == "failed":
            print(f"  failed: run {r['index']} {r['run_id']} {describe_params(r['params'])}: {r['error']}")
    if not outcome.failed:
        _draw_case_figures(args.out, sweep.figures)
    return 1 if outcome.failed else 0


def cmd_sweep_task(args) -> int:
    from rdmalab.sweep import run_task

    try:
        rec = run_task(args.dir, args.index)
    except IndexError as e:
        raise SystemExit(f"rdmalab: sweep-task: {e}") from None
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


def _window_args(args) -> tuple[int | None, int | None]:
    """--start and --end in ps; an --end at or before --start is refused, as it holds no flow."""
    start, end = _time_arg(args.start), _time_arg(args.end)
    if start is not None and end is not None and end <= start:
        raise SystemExit(f"rdmalab: --end `{args.end}` — allowed: a time after --start `{args.start}`")
    return start, end


def _warn_empty_window(results, start: int | None, end: int | None) -> None:
    """Flows, but none started in the window: the slowdown and FCT plots and
    the slowdown table are empty, which would otherwise pass unremarked."""
    import polars as pl

    from rdmalab.units import fmt_time

    if start is None and end is None:
        return
    flows = results.table("flows")
    if flows.height == 0:
        return
    inside = flows.filter(pl.col("start_ps") >= (start or 0))
    if end is not None:
        inside = inside.filter(pl.col("start_ps") < end)
    if inside.height == 0:
        print(f"rdmalab: warning: no flow started in [{fmt_time(start or 0)}, "
              f"{'the end' if end is None else fmt_time(end)}), the window of --start/--end; the flows started "
              f"from {fmt_time(flows['start_ps'].min())} to {fmt_time(flows['start_ps'].max())}, so there is "
              f"no slowdown or FCT to show", file=sys.stderr)


def slowdown_text(sd, cols: list[str], results) -> str:
    """The slowdown-by-size table, one block per group."""
    from rdmalab.plots import group_label
    from rdmalab.units import plural

    qcols = [c for c in sd.columns if c.startswith("p") and c[1:2].isdigit()]
    parts = sd.partition_by(cols, maintain_order=True, as_dict=True) if cols else {(): sd}
    out = []
    for key, g in parts.items():
        label = group_label(dict(zip(cols, key)), cols, results.name)
        out.append(f"{label}  ({plural(g['flows'].sum(), 'flow')})")
        out.append(f"  {'bucket':>6}  {'size min':>10}  {'size max':>10}  {'flows':>6}  {'mean':>7}  "
                   + "  ".join(f"{c:>7}" for c in qcols))
        for r in g.iter_rows(named=True):
            out.append(f"  {r['bucket']:>6}  {r['size_min_bytes']:>10}  {r['size_max_bytes']:>10}  {r['flows']:>6}  "
                       f"{r['mean']:>7.3f}  " + "  ".join(f"{r[c]:>7.3f}" for c in qcols))
    return "\n".join(out)


def _warn_left_out(results) -> None:
    """Say what analyze, plot and report leave out: runs without results,
    and flows that did not complete."""
    _warn_left_out_runs(results)
    _warn_unfinished_flows(results)
    _warn_mixed_builds(results)


def _warn_mixed_builds(results) -> None:
    """A sweep resumed with --keep-other-builds holds runs of several builds
    of rdmalab, which may not agree: say so wherever its results are read."""
    if results.kind != "sweep":
        return
    builds: dict[str, int] = {}
    for r in results.rows:
        if r["status"] == "done":
            b = r.get("rdmalab_build") or "not recorded"
            builds[b] = builds.get(b, 0) + 1
    if len(builds) > 1:
        which = ", ".join(f"{b} ({n})" for b, n in sorted(builds.items()))
        print(f"rdmalab: warning: the runs were made by {len(builds)} builds of rdmalab, whose results may "
              f"differ: {which} (manifest column rdmalab_build)", file=sys.stderr)


def _warn_unfinished_flows(results) -> None:
    """The flows table holds completed flows only, so FCTs and slowdowns
    are of those: a run cut short before its long flows finished looks
    better than it was. Say how many flows of the finished runs did not
    complete (summary.json: flows_total − flows_completed)."""
    from rdmalab.outputs import read_json
    from rdmalab.sweep.spec import describe_params
    from rdmalab.units import plural

    total = unfinished = runs = 0
    first = None
    for row in results.done():
        s = read_json(results.run_path(row) / "summary.json")
        n = s.get("flows_total", 0) - s.get("flows_completed", 0)
        total += s.get("flows_total", 0)
        if n > 0:
            unfinished += n
            runs += 1
            first = first or row
    if not unfinished:
        return
    where = "" if results.kind == "run" else (
        f" in {plural(runs, 'run')}, first: run {first['index']} {describe_params(first['params'])}")
    print(f"rdmalab: warning: {unfinished} of {plural(total, 'flow')} did not complete{where}; FCTs and slowdowns "
          f"are of completed flows only (flows that start after `duration`, or need longer, are not counted)",
          file=sys.stderr)


def _warn_left_out_runs(results) -> None:
    """Say which runs analyze, plot and report leave out: a sweep's failed
    and pending runs have no results, so a setting whose runs all failed
    would be missing from every plot without a word; a single run that
    ended early has only what it finished."""
    from rdmalab.sweep.spec import describe_params
    from rdmalab.units import plural

    if results.kind == "run":
        if end := results.ended_early():
            print(f"rdmalab: warning: the run {end} (summary.json end: {end}); its tables hold only what it "
                  f"finished", file=sys.stderr)
        return
    out = [r for r in results.rows if r["status"] != "done"]
    if not out:
        return
    counts = ", ".join(f"{n} {st}" for st in ("failed", "pending") if (n := sum(r["status"] == st for r in out)))
    first = out[0]
    print(f"rdmalab: warning: {len(out)} of {plural(len(results.rows), 'run')} left out ({counts}), first: run "
          f"{first['index']} {describe_params(first['params'])}; `rdmalab sweep SWEEP.yaml --out DIR` runs pending "
          f"runs, with --retry-failed failed ones", file=sys.stderr)


def cmd_analyze(args) -> int:
    from rdmalab.analysis import MAX_BUCKETS, default_buckets, flows_needed, slowdown_by_size
    from rdmalab.plots import group_columns, in_sweep_order
    from rdmalab.sweep import Results
    from rdmalab.units import plural

    results = Results(args.path)
    _warn_left_out(results)
    cols = args.by if args.by is not None else group_columns(results)
    unknown = [c for c in cols if c not in results.param_names and c not in results.param_columns and c != "run_id"]
    if unknown:
        raise SystemExit(f"rdmalab: --by `{unknown[0]}`: not a parameter of {args.path}; "
                         f"allowed: run_id{''.join(', ' + p for p in results.param_names)}")
    cols = [results.column(c) if c in results.param_names else c for c in cols]
    flows = results.table("flows")
    start, end = _window_args(args)
    _warn_empty_window(results, start, end)
    buckets = args.buckets or default_buckets(flows, cols, 0.99, start, end)
    sd = slowdown_by_size(flows, by=cols, buckets=buckets, start_ps=start, end_ps=end)
    sd = in_sweep_order(sd, results, [c for c in cols if c != "run_id"], ["bucket"])
    if args.csv:
        sys.stdout.write(sd.write_csv())
        return 0
    # A single run that failed or was interrupted is not a finished one.
    ended = results.ended_early()
    runs = f"1 {ended} run (its tables hold what it did before it ended)" if ended else plural(
        len(results.done()), "finished run")
    sized = "" if args.buckets else f" (--buckets default: ≥{flows_needed(0.99)} flows each for p99, at most {MAX_BUCKETS})"
    print(f"FCT slowdown by flow size: {results.name}, {runs}, "
          f"{sd['flows'].sum()} of {plural(flows.height, 'flow')} (start window {args.start or 'start'} to {args.end or 'end'}), "
          f"{_buckets_text(buckets)}{sized}, nearest-rank quantiles, sizes in bytes")
    print(slowdown_text(sd, cols, results))
    return 0


def _output_file(path, option: str) -> None:
    """Refuse, before any work, an output file that cannot be written."""
    _name_lengths(path, option)
    p = Path(path)
    if p.is_dir():
        raise SystemExit(f"rdmalab: {option} `{p}` is a directory; allowed: a file to write")
    if not p.resolve().parent.is_dir():
        raise SystemExit(f"rdmalab: {option} `{p}` cannot be written: its directory `{p.parent}` does not exist")


#: The longest file name most file systems take (ext4, XFS, APFS, NTFS: 255 bytes).
NAME_MAX = 255


def _name_lengths(path, option: str) -> None:
    """Refuse, before any work, an output path with a name no file system
    takes (it failed deep inside with a raw `File name too long`)."""
    for part in Path(path).parts:
        n = len(os.fsencode(part))
        if n > NAME_MAX:
            raise SystemExit(f"rdmalab: {option} `{path}`: the name `{part[:24]}…` is {n} bytes long; "
                             f"allowed: names of at most {NAME_MAX} bytes")


def _output_dir(path, option: str) -> None:
    """Refuse, before any work, an output directory that is a file."""
    _name_lengths(path, option)
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise SystemExit(f"rdmalab: {option} `{p}` is a file; allowed: a directory (made if missing)")


def cmd_report(args) -> int:
    from rdmalab.report import write_report

    from rdmalab.sweep import Results

    if args.out is not None:
        _output_file(args.out, "--out")
    _warn_left_out(Results(args.path))
    start, end = _window_args(args)
    _warn_empty_window(Results(args.path), start, end)
    path = write_report(args.path, args.out, start_ps=start, end_ps=end, buckets=args.buckets)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB; opens offline in any browser)")
    return 0


def cmd_plot(args) -> int:
    from rdmalab.plots import write_plots

    from rdmalab.casestudies import remembered, write_figures

    from rdmalab.sweep import Results

    _output_dir(args.out, "--out")
    _warn_left_out(Results(args.path))
    start, end = _window_args(args)
    _warn_empty_window(Results(args.path), start, end)
    paths = write_plots(args.path, args.out, fmt=args.format, start_ps=start, end_ps=end, buckets=args.buckets)
    problems: list[str] = []
    paths += write_figures(args.path, remembered(args.path), args.out, fmt=args.format, problems=problems)
    for p in problems:
        print(f"rdmalab: warning: {p}", file=sys.stderr)
    print(f"wrote {len(paths)} plot{'s' if len(paths) != 1 else ''} to {args.out}: " + ", ".join(p.name for p in paths))
    return 0


def _print_warnings(conv) -> None:
    for w in conv.warnings:
        print(f"rdmalab: warning: {w}", file=sys.stderr)


def cmd_hpcc_convert(args) -> int:
    from rdmalab.units import plural
    from rdmalab.hpcc import convert, scenario_yaml
    from rdmalab.runner import validate

    _output_file(args.out, "--out")
    conv = convert(args.config, rto=args.rto, seed=args.seed, sample_interval=args.sample_interval)
    _print_warnings(conv)
    info = validate(conv.load(Path(args.config).parent, args.config))
    out = Path(args.out)
    inputs = {"the config file": conv.config_path, "TOPOLOGY_FILE": conv.topology_path, "FLOW_FILE": conv.flow_path}
    for what, path in inputs.items():
        if out.resolve() == Path(path).resolve():
            raise SystemExit(f"rdmalab: --out `{out}` is {what}; write the scenario to a file of its own")
    try:
        out.write_text(scenario_yaml(conv, out))
    except OSError as e:
        raise SystemExit(f"rdmalab: --out `{out}` cannot be written ({e.strerror})") from None
    for n in conv.notes:
        print(f"  {n}")
    print(f"wrote {out}: {plural(info['hosts'], 'host')}, {plural(info['nodes'] - info['hosts'], 'switch', 'switches')}, "
          f"{plural(info['links'], 'link')}, {plural(info['flows'], 'flow')}, cc {info['cc']}, "
          f"{info['duration_ps'] / 1e9:g} ms (valid)")
    return 0


def cmd_hpcc_run(args) -> int:
    from rdmalab.hpcc import convert, run_config

    conv = convert(args.config, rto=args.rto, seed=args.seed, sample_interval=args.sample_interval)
    _print_warnings(conv)
    for n in conv.notes:
        print(f"  {n}")
    out = Path(args.out) if args.out else None
    r = run_config(args.config, out, progress=not args.quiet, parquet=not args.no_parquet, conversion=conv,
                   threads=args.threads, _out_name="--out")
    stop = conv.config_value("SIMULATOR_STOP_TIME")
    print(summary_table(r.result.summary, r.result.out_dir, stop_ps=_stop_ps(r.result),
                        stop_given=None if stop is None else f"SIMULATOR_STOP_TIME {stop}"))
    for kind, p in r.written.items():
        print(f"  wrote {p} (ns-3 {kind} format)")
    return 0


def cmd_hpcc_traffic(args) -> int:
    from rdmalab.hpcc.traffic import cdf_mean, generate_flows, load_cdf, parse_bandwidth, write_flow_file

    _output_file(args.output, "--output")
    try:
        cdf = load_cdf(args.cdf)
        bw = parse_bandwidth(args.bandwidth)
        flows = generate_flows(cdf, args.nhost, args.load, bw, args.time, args.seed, base_ns=round(args.base * 1e9))
    except ScenarioError as e:  # about the arguments or the CDF file, not a scenario
        raise SystemExit(f"rdmalab: {e}") from None
    try:
        write_flow_file(args.output, flows)
    except OSError as e:
        raise SystemExit(f"rdmalab: --output `{args.output}` cannot be written ({e.strerror})") from None
    offered = sum(f[2] for f in flows) * 8 / (args.nhost * bw * args.time) if flows else 0.0
    print(f"wrote {args.output}: {len(flows)} flow{'s' if len(flows) != 1 else ''} from {args.nhost} "
          f"host{'s' if args.nhost != 1 else ''} over {args.time:g} s from "
          f"{args.base:g} s (seed {args.seed}); CDF mean {cdf_mean(cdf):,.0f} B, offered load {offered:.3f} "
          f"of {bw / 1e9:g} Gb/s per host (target {args.load:g})")
    return 0


def cmd_hpcc_analyze(args) -> int:
    import polars as pl

    from rdmalab.hpcc.fct import FctFileError, fct_slowdown, read_fct

    dport = {0: 100, 1: 200, 2: None}[args.type] if args.dport is None else args.dport
    labels: dict[str, str] = {}
    for f in args.fct_files:  # a label per column, unique even if a file is given twice
        label = f if f not in labels else f"{f}#{sum(k.split('#')[0] == f for k in labels) + 1}"
        labels[label] = f
    # `a+b+c` pools several runs (seeds) into one column.
    for f in labels.values():
        if "+" in f and "" in f.split("+"):
            # An empty name read as `.`, "a directory", naming neither.
            raise FctFileError(f"`{f}` has an empty file name between, before or after its `+` signs; "
                               f"allowed: fct.txt files joined by `+`, like `a/fct.txt+b/fct.txt`")
    tables = {label: pl.concat([read_fct(part) for part in f.split("+")]) if "+" in f else f
              for label, f in labels.items()}
    if args.as_fct_analysis:
        return _print_as_fct_analysis(tables, dport, args)
    sd = fct_slowdown(tables, dport=dport, time_limit_ns=args.time_limit, buckets=args.buckets)
    if args.csv:
        sys.stdout.write(sd.write_csv())
        return 0
    qcols = [c for c in sd.columns if c.startswith("p") and c[1:2].isdigit()]
    which = "all flows" if dport is None else f"dport {dport}"
    limit = "" if args.time_limit is None else f", start + fct < {args.time_limit} ns"
    print(f"FCT slowdown (fct / standalone_fct, at least 1) by flow size: {which}{limit}; "
          f"{args.buckets} buckets of equal flow count, nearest-rank quantiles, sizes in bytes")
    present = set(sd["file"].to_list())
    files = [f for f in labels if f in present]
    for f in labels:
        if f not in present:
            print(f"{f}: no flows left after the filters")
    if not files:
        return 0
    blocks = {f: {r["bucket"]: r for r in sd.filter(pl.col("file") == f).iter_rows(named=True)} for f in files}
    width = 10 + 9 * len(qcols)
    print(f"  {'bucket':>6}" + "".join(f"  {(f if len(f) <= width else '...' + f[3 - width:]):>{width}}" for f in files))
    print(f"  {'':>6}" + "".join(f"  {'size max':>10}" + "".join(f" {c:>8}" for c in qcols) for _ in files))
    for b in range(args.buckets):
        cells = []
        for f in files:
            r = blocks[f].get(b)
            cells.append(f"  {'':>{width}}" if r is None else
                         f"  {r['size_max_bytes']:>10}" + "".join(f" {r[c]:>8.3f}" for c in qcols))
        print(f"  {b:>6}" + "".join(cells))
    print("  flows " + "".join(f"  {int(sd.filter(pl.col('file') == f)['flows'].sum()):>{width}}" for f in files))
    if len(files) == 2:
        _print_agreement(blocks, files, qcols, args.buckets)
    return 0


def _print_as_fct_analysis(tables, dport, args) -> int:
    """`hpcc analyze --as-fct-analysis`: the lines ns-3 HPCC's
    analysis/fct_analysis.py prints, one column group per file, as its CCs."""
    from rdmalab.hpcc.fct import FCT_ANALYSIS_TIME_LIMIT_NS, fct_analysis_rows, read_fct

    if 100 % args.buckets:
        print(f"rdmalab: --buckets: {args.buckets} — with --as-fct-analysis allowed: a divisor of 100 "
              f"(fct_analysis.py's -s step is 100 / buckets)", file=sys.stderr)
        return 2
    limit = FCT_ANALYSIS_TIME_LIMIT_NS if args.time_limit is None else args.time_limit
    step = 100 // args.buckets
    rows = [fct_analysis_rows(t if not isinstance(t, str) else read_fct(t), dport, limit, step)
            for t in tables.values()]
    print(f"# as analysis/fct_analysis.py -s {step} -T {limit} prints it"
          f"{'' if dport is None else f' (dport {dport})'}: bucket start, size of its last flow, then p50 p95 p99 "
          f"per file: {' '.join(tables)}")
    for k, first in enumerate(rows[0]):
        print("%.3f %d" % first[:2] + "".join("\t%.3f %.3f %.3f" % r[k][2:] for r in rows))
    return 0


def _print_agreement(blocks, files, qcols, buckets) -> None:
    """With two columns: each bucket's quantiles of the second over the first,
    and the median and largest deviation per quantile (a summary of agreement)."""
    a, b = files
    print(f"\nratio {b} / {a}:")
    print(f"  {'bucket':>6}" + "".join(f" {c:>8}" for c in qcols))
    ratios: dict[str, list[float]] = {c: [] for c in qcols}
    for k in range(buckets):
        ra, rb = blocks[a].get(k), blocks[b].get(k)
        if ra is None or rb is None:
            continue
        row = []
        for c in qcols:
            r = rb[c] / ra[c]
            ratios[c].append(r)
            row.append(f" {r:>8.3f}")
        print(f"  {k:>6}" + "".join(row))
    if not ratios[qcols[0]]:
        return
    # The upper median (11th of 20) of the buckets' deviations: a summary of agreement, not a
    # quantile of flows; docs/hpcc.md's agreement tables (ns-3 runs) were measured with it.
    med = [sorted(abs(r - 1) for r in ratios[c])[len(ratios[c]) // 2] for c in qcols]
    worst = [max(abs(r - 1) for r in ratios[c]) for c in qcols]
    print("  median |r-1|" + "".join(f" {100 * m:>7.1f}%" for m in med))
    print("  max |r-1|   " + "".join(f" {100 * w:>7.1f}%" for w in worst))


def cmd_bench(args) -> int:
    from rdmalab.bench import load_main
    from rdmalab.bench import main as bench_main

    if args.load is not None:
        return load_main(args.load, args.repeat)
    return bench_main(args)


def cmd_cc_build(args) -> int:
    from rdmalab import ccompile

    try:
        out = ccompile.build(args.source, args.output, key="source")
    except ccompile.CompileError as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


def cmd_cc_flags(args) -> int:
    from rdmalab import ccompile

    print(f"{' '.join(ccompile.FLAGS)} {ccompile.include_flags()} -lm")
    return 0


THREADS_HELP = ("split the run over this many threads (default 1); the outputs are the serial run's, byte for "
                "byte; fabric scenarios with flows and built-in CC (docs/parallel.md)")
BUCKETS_HELP = ("flow-size buckets for the slowdown: a number of buckets of equal flow count (default: sized to "
                "the flow count, so each bucket holds enough flows for its percentile: 100 for p99, 10 for p50; "
                "at most 20), or fixed size edges, the same for every setting: `pfabric` (100KB, 10MB) or sizes "
                "separated by commas (10KB,100KB,1MB)")


def _show_scenario_warnings() -> None:
    """Print a ScenarioWarning as one line of our own, with `--quiet` too
    (it says what the run will leave out; the progress line is what quiet
    drops); other warnings keep the format they had."""
    import warnings

    from rdmalab.scenario import ScenarioWarning

    shown = warnings.showwarning
    if getattr(shown, "rdmalab", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, ScenarioWarning):
            print(f"rdmalab: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    show.rdmalab = True
    warnings.showwarning = show


SET_HELP = ("set a key of the scenario, dotted as in sweeps (--set cc.algorithm=hpcc --set duration=5ms); "
            "the value is read as YAML, `null` removes the key; repeat for more keys")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rdmalab", description=__doc__)
    parser.add_argument("--version", action="version", version=f"rdmalab {_core.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run a scenario and write its outputs")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help=SET_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--no-parquet", action="store_true", help="write CSV only")
    p.add_argument("--threads", type=_threads, default=1, help=THREADS_HELP)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("validate", help="check scenarios without running them")
    p.add_argument("scenarios", nargs="+")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help=SET_HELP)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("algorithms", help="list congestion-control algorithms and their parameters")
    p.add_argument("name", nargs="?", help="only this algorithm")
    p.add_argument("--markdown", action="store_true", help="print the reference as Markdown (docs/algorithms.md)")
    p.set_defaults(func=cmd_algorithms)

    p = sub.add_parser("sweep", help="run every scenario of a sweep file (resumes an interrupted sweep)")
    p.add_argument("sweep", help="sweep YAML file (docs/sweeps.md)")
    p.add_argument("--out", required=True, help="sweep directory: manifest, plan and one directory per run")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="set a key of every run's scenario, after the file's `set:` (--set duration=5ms); "
                        "a key the grid varies is refused; repeatable")
    from rdmalab.sweep import BACKENDS

    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="local process pool (default), a Ray cluster, or write a SLURM array job script")
    p.add_argument("--workers", type=_positive_int, help="local: processes; ray without --address: CPUs of the local "
                                               "Ray instance (default: the machine's cores)")
    p.add_argument("--address", help="ray: the cluster to connect to (e.g. `auto`, `ray://head:10001`); "
                                     "default: start a local one")
    p.add_argument("--retry-failed", action="store_true", help="run failed runs again (they are kept otherwise)")
    builds = p.add_mutually_exclusive_group()
    builds.add_argument("--rerun-other-builds", dest="other_builds", action="store_const", const="rerun",
                        help="run again the finished runs that another build of rdmalab made (the sweep refuses "
                             "to start otherwise)")
    builds.add_argument("--keep-other-builds", dest="other_builds", action="store_const", const="keep",
                        help="keep the finished runs that another build of rdmalab made, as they are")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="slurm: an extra #SBATCH line, e.g. --sbatch=--partition=short (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="expand and validate, list the runs, run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.set_defaults(func=cmd_sweep)

    # Internal: what a SLURM array task runs; not listed in the help.
    p = sub.add_parser("sweep-task")
    p.add_argument("dir", help="sweep directory")
    p.add_argument("index", type=int, help="the run's index in plan.jsonl")
    p.set_defaults(func=cmd_sweep_task)

    p = sub.add_parser("analyze", help="print FCT slowdown by flow-size bucket for a run or sweep directory")
    p.add_argument("path", help="a run directory (rdmalab run --out) or a sweep directory (rdmalab sweep --out)")
    p.add_argument("--by", nargs="*", help="columns to group by (default: every parameter but seed; "
                                           "`--by run_id` for one table per run)")
    p.add_argument("--start", help="drop flows that started before this time (warm-up), e.g. 1ms")
    p.add_argument("--end", help="drop flows that started at or after this time (tail), e.g. 9ms")
    p.add_argument("--buckets", type=_buckets_arg, help=BUCKETS_HELP)
    p.add_argument("--csv", action="store_true", help="write the table as CSV to stdout")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("report", help="write a self-contained HTML report of a run or sweep directory")
    p.add_argument("path", help="a run or sweep directory")
    p.add_argument("--out", help="HTML file (default: PATH/report.html)")
    p.add_argument("--start", help="slowdown: only flows that started at or after this time")
    p.add_argument("--end", help="slowdown: only flows that started before this time")
    p.add_argument("--buckets", type=_buckets_arg, help=BUCKETS_HELP)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("plot", help="draw the standard plots of a run or sweep directory as PNG or SVG")
    p.add_argument("path", help="a run or sweep directory")
    p.add_argument("--out", required=True, help="directory for the image files")
    p.add_argument("--format", choices=("png", "svg"), default="png")
    p.add_argument("--start", help="slowdown: only flows that started at or after this time")
    p.add_argument("--end", help="slowdown: only flows that started before this time")
    p.add_argument("--buckets", type=_buckets_arg, help=BUCKETS_HELP)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("figures", help="list the case-study figures a scenario or sweep can name in `figures:`")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("hpcc", help="run the ns-3 HPCC simulator's config files; its traffic generator and FCT analysis")
    hsub = p.add_subparsers(dest="hpcc_command", required=True)
    for name, helptext in (("run", "run an ns-3 HPCC config.txt; write its fct/pfc/qlen files in ns-3's formats"),
                           ("convert", "write the native scenario equivalent to an ns-3 HPCC config.txt")):
        hp = hsub.add_parser(name, help=helptext)
        hp.add_argument("config", help="the ns-3 config file (e.g. mix/config.txt); relative paths in it are "
                                       "looked up from the current directory first, as ns-3 does")
        if name == "run":
            hp.add_argument("--out", help="directory for rdmalab's own tables (CSV, Parquet, summary); "
                                          "default: beside FCT_OUTPUT_FILE, named <its stem>-rdmalab")
            hp.add_argument("--quiet", action="store_true", help="no progress line")
            hp.add_argument("--no-parquet", action="store_true", help="write CSV only")
            hp.add_argument("--threads", type=_threads, default=1, help=THREADS_HELP)
        else:
            hp.add_argument("--out", required=True, help="the scenario YAML file to write")
        hp.add_argument("--rto", default="off", help="retransmission timeout: `off` (default, as ns-3, which has "
                                                     "none) or a duration such as 1ms")
        hp.add_argument("--seed", type=int, default=1, help="seed of rdmalab's random streams (ECN marking, "
                                                            "loss, ECMP; default 1)")
        hp.add_argument("--sample-interval", default="off", help="rdmalab's per-QP and per-port samples "
                                                                 "(default off: ns-3 has none), e.g. 10us")
        hp.set_defaults(func=cmd_hpcc_run if name == "run" else cmd_hpcc_convert)

    hp = hsub.add_parser("traffic", help="generate an ns-3 flow file like traffic_gen.py, seeded, exact count")
    hp.add_argument("-c", "--cdf", required=True, help="flow-size CDF: websearch, fbhdp, alistorage2019, "
                                                       "googlerpc2008, cachefollower, or a file of `size_bytes cdf_percent` lines")
    hp.add_argument("-n", "--nhost", type=int, required=True, help="number of hosts (ids 0..n-1)")
    hp.add_argument("-l", "--load", type=_finite_float(above=0), default=0.3,
                    help="load per host, a fraction of the host link (0.3)")
    hp.add_argument("-b", "--bandwidth", default="10G", help="host link rate: 100G, 25G, 10M ... (10G)")
    hp.add_argument("-t", "--time", type=_finite_float(above=0), default=10.0, help="arrival window in seconds (10)")
    hp.add_argument("-o", "--output", required=True, help="the flow file to write")
    hp.add_argument("--seed", type=int, default=1, help="random seed (Python's random.Random; default 1)")
    # ns-3 keeps times in signed 64-bit nanoseconds: about 9.2e9 s.
    hp.add_argument("--base", type=_finite_float(low=0, high=1e9), default=2.0,
                    help="start of the arrival window in seconds (2.0, as traffic_gen; at most 1e9)")
    hp.set_defaults(func=cmd_hpcc_traffic)

    hp = hsub.add_parser("analyze", help="FCT slowdown by flow-size bucket of ns-3-format fct.txt files, side by side")
    hp.add_argument("fct_files", nargs="+",
                    help="fct.txt files (from ns-3 or rdmalab), one column each; `a+b+c` pools several files "
                         "(e.g. seeds) into one column; with two columns the ratios of the second to the first follow")
    hp.add_argument("-t", "--type", type=int, choices=(0, 1, 2), default=0,
                    help="as fct_analysis.py: 0 normal flows (dport 100, default), 1 incast (dport 200), 2 all")
    hp.add_argument("--dport", type=_udp_port, help="keep only this dport (overrides -t)")
    hp.add_argument("-T", "--time-limit", type=int, help="keep flows with start + fct < T (ns), as fct_analysis.py")
    hp.add_argument("--buckets", type=_positive_int, default=20,
                    help="flow-size buckets of equal flow count (20: 5%% each)")
    as_what = hp.add_mutually_exclusive_group()
    as_what.add_argument("--csv", action="store_true", help="write the table as CSV to stdout")
    as_what.add_argument("--as-fct-analysis", action="store_true",
                    help="print what ns-3 HPCC's analysis/fct_analysis.py prints for these files, digit for digit "
                         "(its rounding, tie order, bucket edges and quantile element; -T defaults to its 3 s)")
    hp.set_defaults(func=cmd_hpcc_analyze)

    p = sub.add_parser("cc", help="build C controllers (DOCA PCC's device API) into libraries rdmalab loads")
    csub = p.add_subparsers(dest="cc_command", required=True)
    cp = csub.add_parser("build", help="compile a C controller with rdmalab's runtime into a shared library")
    cp.add_argument("source", help="the controller's C file")
    cp.add_argument("-o", "--output", help="library to write (default: the cache, whose path is printed)")
    cp.set_defaults(func=cmd_cc_build)
    cp = csub.add_parser("flags", help="print the compiler flags, include directory and runtime to build one by hand")
    cp.set_defaults(func=cmd_cc_flags)

    p = sub.add_parser("bench", help="measure speed and memory on the benchmark scenarios")
    p.add_argument("scenarios", nargs="*", help="scenario files (default: benchmarks/*.yaml)")
    p.add_argument("--repeat", type=_positive_int, default=1, help="runs per scenario; the best is reported")
    p.add_argument("--large", action="store_true",
                   help="also run benchmarks/large/*.yaml (f: a k = 64 fat tree, 65,536 hosts; minutes and ~0.5 GB)")
    p.add_argument("--threads", type=_threads, action="append",
                   help="run every scenario on this many threads (repeatable: --threads 1 --threads 2); default: "
                        "each on one thread, and (b) on two as well")
    p.add_argument("--load", type=_positive_int, nargs="?", const=100_000, metavar="FLOWS",
                   help="instead: time reading, validating and building FLOWS flows (default 100,000) given as YAML, "
                        "as a CSV flow_file and as ns-3's flow.txt")
    p.set_defaults(func=cmd_bench)

    given = sys.argv[1:] if argv is None else argv
    if given and not given[0].startswith("-") and given[0] not in sub.choices:
        # argparse would list every command, the internal sweep-task too
        public = [a.dest for a in sub._choices_actions]
        parser.error(f"unknown command `{given[0]}`; allowed: {', '.join(public)}")
    args = parser.parse_args(argv)
    from rdmalab.hpcc.fct import FctFileError
    from rdmalab.outputs import CorruptOutput, OutputDirError
    from rdmalab.sweep import NotResults, OtherBuilds, StoreBusy, SweepError

    _show_scenario_warnings()
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
    except OtherBuilds as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 2
    except (NotResults, CorruptOutput) as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 2
    except FctFileError as e:
        print(f"rdmalab: {e}", file=sys.stderr)
        return 2
    except RunError as e:
        print(f"rdmalab: run failed: {e}", file=sys.stderr)
        _say_saved(e)
        return 3
    except OutputDirError as e:
        print(f"rdmalab: nothing was run\n{e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print("rdmalab: interrupted", file=sys.stderr)
        _say_saved(e)
        return 130
    except BrokenPipeError:
        # The reader stopped reading (`rdmalab algorithms | head`): stop as a
        # program killed by SIGPIPE does, without a traceback at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    raise SystemExit(main())
