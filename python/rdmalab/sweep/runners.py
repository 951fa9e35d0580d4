"""Runners: where the runs of a sweep execute.

* local  — a process pool on this machine (the default; needs nothing installed)
* ray    — tasks on a Ray cluster (`pip install 'rdmalab[ray]'`); each task sends its
           output files back to the driver, so workers need no shared file system
* slurm  — no execution here: a SLURM array job script, one array task per run

Every backend executes a run with `execute()` and puts it into the store the
same way, so the files of a run do not depend on the backend or worker count.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import signal
import socket
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from multiprocessing import TimeoutError as PoolTimeout
from multiprocessing import get_context
from pathlib import Path

from rdmalab import __version__
from rdmalab.build import build_id
from rdmalab.runner import _fmt_secs, run
from rdmalab.scenario import ScenarioWarning, scenario_from_dict
from rdmalab.sweep.common import OTHER_BUILDS, OtherBuilds
from rdmalab.sweep.spec import Sweep, describe_params
from rdmalab.sweep.store import RECORD_FIELDS, RUN_RECORD, Store


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def execute(scenario_data: dict, work_dir: Path, backend: str) -> dict:
    """Run one scenario into `work_dir` and write its run.json; never raises for a failing run."""
    started, t0 = _now(), time.perf_counter()
    rec = {"status": "done", "error": None}
    try:
        with warnings.catch_warnings():
            # The sweep said it once when it expanded the runs.
            warnings.simplefilter("ignore", ScenarioWarning)
            run(scenario_from_dict(scenario_data), out_dir=work_dir)
    except Exception as e:  # a failed run is recorded, and the sweep goes on
        rec = {"status": "failed", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    rec.update({
        "wall_seconds": round(time.perf_counter() - t0, 6),
        "started_at": started,
        "finished_at": _now(),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "backend": backend,
        "rdmalab_version": __version__,
        "rdmalab_build": build_id(),
        "python_version": platform.python_version(),
    })
    (work_dir / RUN_RECORD).write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    return rec


def _local_task(root: str, run_id: str, scenario_data: dict) -> dict:
    store = Store(root)
    work = store.new_work_dir(run_id)
    rec = execute(scenario_data, work, "local")
    store.commit(run_id, work)
    return rec


def _ray_task(run_id: str, scenario_data: dict) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory(prefix=f"rdmalab-{run_id}-") as tmp:
        rec = execute(scenario_data, Path(tmp), "ray")
        files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir())}
    return rec, files


class _Progress:
    """Overall progress on stderr: a bar with an ETA on a terminal, one line per run otherwise."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled
        self.tty = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.done = self.failed = 0

    def update(self, row: dict) -> None:
        self.done += 1
        self.failed += row["status"] == "failed"
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        frac = self.done / self.total
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        failed = f"  {self.failed} failed" if self.failed else ""
        head = f"[{bar}] {self.done}/{self.total} runs{failed}  elapsed {_fmt_secs(elapsed)}  ETA {_fmt_secs(eta)}"
        if self.tty:
            sys.stderr.write("\r" + head + ("\n" if self.done == self.total else ""))
        else:
            what = row["status"] + (f" ({row['error']})" if row["error"] else "")
            sys.stderr.write(f"{head}  run {row['index']} {row['run_id']} {describe_params(row['params'])}: {what}\n")
        sys.stderr.flush()


@dataclass
class SweepOutcome:
    rows: list[dict]  # the final manifest
    ran: int  # runs executed by this invocation
    resumed: int  # runs already finished before it started

    @property
    def failed(self) -> int:
        return sum(r["status"] == "failed" for r in self.rows)


def _prepare(store: Store, sweep: Sweep, retry_failed: bool, other_builds: str | None) -> list[dict]:
    if other_builds not in (None, *OTHER_BUILDS):
        raise ValueError(f"other_builds `{other_builds}` — allowed: None (refuse), {', '.join(OTHER_BUILDS)}")
    store.clean_work()
    _check_builds(store, sweep, other_builds)
    store.write_plan(sweep)
    plan = store.read_plan()
    if retry_failed:
        for p in plan:
            rec = store.record(p["run_id"])
            if rec and rec["status"] == "failed":
                store.forget(p["run_id"])
    rows = store.manifest_rows(plan)
    store.write_manifest(rows)
    return rows


def _check_builds(store: Store, sweep: Sweep, other_builds: str | None) -> None:
    """Finished runs of this sweep that another build of rdmalab made: refused
    unless `other_builds` says to rerun them (they are removed) or keep them.
    A run's id hashes its scenario, not the simulator, so without this a
    changed model would reuse old results beside new ones without a word."""
    here = build_id()
    theirs: dict[str, list[str]] = {}
    for run_id in dict.fromkeys(r.run_id for r in sweep.runs):
        rec = store.record(run_id)
        if rec is not None and rec.get("rdmalab_build") != here:
            theirs.setdefault(rec.get("rdmalab_build") or "not recorded", []).append(run_id)
    if not theirs:
        return
    if other_builds == "rerun":
        for ids in theirs.values():
            for run_id in ids:
                store.forget(run_id)
        return
    if other_builds == "keep":
        return
    n = sum(len(ids) for ids in theirs.values())
    which = ", ".join(f"{b} ({len(ids)})" for b, ids in sorted(theirs.items()))
    raise OtherBuilds(
        f"{store.root} holds {n} finished run{'s' if n != 1 else ''} of this sweep made by another build of "
        f"rdmalab: {which}; this one is {here}. The same scenario may give other results on this build. "
        f"Run them again with --rerun-other-builds, keep them with --keep-other-builds, or sweep into a new "
        f"directory. Nothing was run.")


def run_sweep(
    sweep: Sweep,
    out_dir: str | Path,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    other_builds: str | None = None,
) -> SweepOutcome:
    """Run every run of `sweep` that is not finished in `out_dir` yet.
    Finished runs that another build of rdmalab made raise [`OtherBuilds`]
    unless `other_builds` is `"rerun"` or `"keep"` ([`_check_builds`])."""
    if backend not in ("local", "ray"):
        raise ValueError(f"backend `{backend}` runs nothing here; allowed: local, ray (slurm: use export_slurm)")
    store = Store(out_dir)
    store.lock()
    try:
        rows = _prepare(store, sweep, retry_failed, other_builds)
        todo = [r for r in sweep.runs if rows[r.index]["status"] == "pending"]
        resumed = len(rows) - len(todo)
        workers = max(1, workers or os.cpu_count() or 1)
        if progress:
            from rdmalab.units import plural

            failed = sum(r["status"] == "failed" for r in rows)
            print(
                f"sweep {sweep.name}: {plural(len(rows), 'run')} ({sweep.shape()}); {resumed - failed} done before, "
                f"{failed} failed before, {len(todo)} to run on {backend}"
                + (f" with {plural(workers, 'worker')}" if backend == "local" or not address else f" at {address}"),
                file=sys.stderr,
            )
        bar = _Progress(len(todo), progress)

        here = build_id()

        def finished(index: int, rec: dict) -> None:
            if rec.get("rdmalab_build") != here:
                # A worker imported another rdmalab: reinstalled while the sweep ran, or
                # another installation on a Ray node. The next start names the runs it made.
                raise OtherBuilds(
                    f"run {index} ({rows[index]['run_id']}) was made by build {rec.get('rdmalab_build')} of rdmalab, "
                    f"but this sweep started with build {here}: was rdmalab reinstalled while the sweep ran, or "
                    f"does a worker run another installation? The sweep stopped; its finished runs are kept.")
            rows[index].update({k: rec.get(k) for k in RECORD_FIELDS})
            store.write_manifest(rows)
            bar.update(rows[index])

        try:
            if todo:
                if backend == "local":
                    _run_local(store, todo, workers, finished)
                else:
                    _run_ray(store, todo, workers, address, finished)
        except BaseException:
            # Interrupted: runs that workers finished after the last update are in the store; say so.
            store.write_manifest(store.manifest_rows(store.read_plan()))
            raise
        return SweepOutcome(rows=rows, ran=len(todo), resumed=resumed)
    finally:
        store.unlock()


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; only the parent acts on it (it stops the workers).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _local_call(args: tuple) -> tuple[int, dict]:
    index, root, run_id, scenario_data = args
    return index, _local_task(root, run_id, scenario_data)


#: How often the sweep wakes while it waits for a run, to act on Ctrl-C.
_POLL_SECONDS = 0.2


def _run_local(store: Store, todo, workers: int, finished) -> None:
    # Each worker is a fresh interpreter (spawn): nothing of the parent's state leaks into runs.
    # On an interrupt the workers are terminated at once; their half-done work directories are
    # removed when the sweep starts again.
    pool = get_context("spawn").Pool(min(workers, len(todo)), initializer=_ignore_sigint)
    try:
        tasks = [(r.index, str(store.root), r.run_id, r.scenario.data) for r in todo]
        results = pool.imap_unordered(_local_call, tasks, chunksize=1)
        while True:
            # A bounded wait: Ctrl-C may reach one of the pool's threads rather than
            # this one, which then sees it only when it wakes. Waiting without end for
            # a run that never ends (a controller stuck in a loop) never did.
            try:
                index, rec = results.next(timeout=_POLL_SECONDS)
            except StopIteration:
                break
            except PoolTimeout:
                continue
            finished(index, rec)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


def _run_ray(store: Store, todo, workers: int, address: str | None, finished) -> None:
    try:
        import ray
    except ImportError:
        raise RuntimeError("the Ray backend needs Ray: pip install 'rdmalab[ray]'") from None
    import logging

    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1, max_retries=2)(_ray_task)
        refs = {task.remote(r.run_id, r.scenario.data): r for r in todo}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            r = refs.pop(done[0])
            rec, files = ray.get(done[0])
            work = store.new_work_dir(r.run_id)
            for name, data in files.items():
                (work / name).write_bytes(data)
            store.commit(r.run_id, work)
            finished(r.index, rec)
    finally:
        if started_here:
            ray.shutdown()


def run_task(out_dir: str | Path, index: int) -> dict:
    """Run the plan's run `index` into the store (what one SLURM array task does)."""
    store = Store(out_dir)
    plan = store.read_plan()
    # Not Python's indexing: -1 would run the last run, and a task id past
    # the plan would fail with a bare IndexError.
    if not 0 <= index < len(plan):
        raise IndexError(f"INDEX `{index}` — allowed: 0 to {len(plan) - 1}, the runs of {store.root / 'plan.jsonl'}")
    p = plan[index]
    rec = store.record(p["run_id"])
    if rec is not None:
        return rec
    work = store.new_work_dir(p["run_id"])
    rec = execute(p["scenario"], work, "slurm")
    store.commit(p["run_id"], work)
    return rec


def _job_name(name: str) -> str:
    """A sweep's name as a SLURM job name: letters, digits, `.`, `_` and
    `-`, anything else (spaces among it, which end an #SBATCH option)
    as `-`."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in name) or "sweep"


def export_slurm(sweep: Sweep, out_dir: str | Path, sbatch_options: list[str] | None = None,
                 other_builds: str | None = None) -> Path:
    """Write OUT/slurm/sweep.sbatch: an array job with one task per unfinished run. Each task runs
    `$RDMALAB sweep-task OUT INDEX`; RDMALAB defaults to this Python's `-m rdmalab`.
    `other_builds` as for [`run_sweep`]."""
    store = Store(out_dir)
    store.lock()
    try:
        rows = _prepare(store, sweep, retry_failed=False, other_builds=other_builds)
    finally:
        store.unlock()
    todo = [r["index"] for r in rows if r["status"] == "pending"]
    sdir = store.root / "slurm"
    sdir.mkdir(exist_ok=True)
    (sdir / "pending.txt").write_text("".join(f"{i}\n" for i in todo))
    root = shlex.quote(str(store.root.resolve()))
    cmd = f"{shlex.quote(sys.executable)} -m rdmalab"
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=rdmalab-{_job_name(sweep.name)}",
        f"#SBATCH --array=0-{max(len(todo) - 1, 0)}",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={store.root.resolve()}/slurm/%A_%a.out",
        *(f"#SBATCH {opt}" for opt in sbatch_options or []),
        f"# rdmalab {__version__}, sweep {sweep.name}: {len(todo)} of {len(rows)} runs still to do.",
        f"# Submit: sbatch {shlex.quote(str((sdir / 'sweep.sbatch').resolve()))}",
        "# Afterwards, `rdmalab sweep SWEEP.yaml --out DIR` (same DIR) rebuilds the manifest",
        "# from the run directories and runs whatever is left.",
        "set -euo pipefail",
        f'RDMALAB="${{RDMALAB:-{cmd}}}"',
        f'INDEX=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {root}/slurm/pending.txt)',
        f'exec $RDMALAB sweep-task {root} "$INDEX"',
    ]
    script = sdir / "sweep.sbatch"
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script
