"""The results store: one directory per run, keyed by a hash of its fully
expanded scenario, and a manifest per sweep. Layout (docs/sweeps.md)::

    OUT/sweep.json        name, source and specification of the sweep
    OUT/plan.jsonl        one line per run: index, run_id, params, scenario
    OUT/manifest.jsonl    one line per run: params -> run, status, timings, versions
    OUT/runs/<run_id>/    the run's outputs (docs/outputs.md) and run.json
    OUT/runs/.work/       runs in progress; a run appears in runs/ only when complete

A run directory is made in runs/.work/ and renamed into place as its last
step, so a run is either finished (with run.json) or absent; the manifest is
rebuilt from the run directories on every start and rewritten atomically, so
a sweep killed at any moment resumes without rerunning or losing a run.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import socket
from pathlib import Path

import polars as pl

from rdmalab.outputs import COLUMNS, SCHEMAS, CorruptOutput, read_json, read_table
from rdmalab.sweep.common import NotResults, StoreBusy
from rdmalab.sweep.spec import param_kind

MANIFEST = "manifest.jsonl"
PLAN = "plan.jsonl"
SWEEP = "sweep.json"
RUN_RECORD = "run.json"

# Columns of a manifest line besides `params`, in order (documented in docs/sweeps.md).
RECORD_FIELDS = (
    "status", "error", "wall_seconds", "started_at", "finished_at", "worker", "backend",
    "rdmalab_version", "rdmalab_build", "python_version",
)

# Tables a run may hold besides SCHEMAS, with the columns analysis expects.
EXTRA_SCHEMAS = {
    # Control-loop delays: one row per controller decision (written by the core once it records them).
    "control_delays": {"time_ps": pl.UInt64, "qp": pl.UInt32, "delay_ps": pl.UInt64},
}


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=False) + "\n" for r in rows)


def _read_jsonl(path: Path) -> list[dict]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise CorruptOutput(f"{path} cannot be read ({e}); sweep into a new directory") from None
    rows = []
    for i, line in enumerate(lines, 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise CorruptOutput(f"{path} line {i} is not the JSON rdmalab writes ({e}); delete that "
                                    f"line (the sweep then reruns its run) or sweep into a new directory") from None
    return rows


def _alive(pid: int) -> bool:
    """Whether process `pid` on this host still runs (a zombie, killed but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


class Store:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.work = self.runs / ".work"
        self._lock = None

    # -------------------------------------------------------- locking
    def lock(self) -> None:
        """Hold an exclusive lock on the store while this process runs a sweep into it."""
        self.root.mkdir(parents=True, exist_ok=True)
        f = open(self.root / ".lock", "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            f.close()
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise StoreBusy(f"another `rdmalab sweep` is running into {self.root}") from None
            raise
        self._lock = f

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # -------------------------------------------------------- runs
    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def record(self, run_id: str) -> dict | None:
        """The run's run.json if the run is finished (done or failed), else None.
        A run.json that is not one rdmalab wrote is refused: whether its run
        finished cannot be told, and rerunning it would hide the damage."""
        path = self.run_dir(run_id) / RUN_RECORD
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, ValueError) as e:
            why = str(e)
        else:
            if isinstance(rec, dict) and rec.get("status") in ("done", "failed"):
                return rec
            status = rec.get("status") if isinstance(rec, dict) else None
            why = f"status `{status}`; allowed: done, failed" if isinstance(rec, dict) else f"holds {type(rec).__name__}"
        raise CorruptOutput(f"{path} is not the run record rdmalab writes ({why}); delete "
                            f"{self.run_dir(run_id)} (the sweep then runs it again) or sweep into a new directory")

    def new_work_dir(self, run_id: str) -> Path:
        """A fresh directory for a run in progress, named so a later start can tell whose it is."""
        self.work.mkdir(parents=True, exist_ok=True)
        d = self.work / f"{run_id}.{socket.gethostname()}.{os.getpid()}"
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        return d

    def commit(self, run_id: str, work_dir: Path) -> None:
        """Move a complete run into place. If it is already there (another worker finished the
        same scenario, which gives identical files), keep that one."""
        try:
            os.rename(work_dir, self.run_dir(run_id))
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            if (self.run_dir(run_id) / RUN_RECORD).exists():
                shutil.rmtree(work_dir, ignore_errors=True)
                return
            # A directory without run.json is no finished run (its run.json
            # was deleted, or it was made by hand): this run, which was run
            # because of that, replaces it rather than being thrown away.
            shutil.rmtree(self.run_dir(run_id))
            os.rename(work_dir, self.run_dir(run_id))

    def forget(self, run_id: str) -> None:
        """Remove a finished run (used to retry failed runs)."""
        shutil.rmtree(self.run_dir(run_id), ignore_errors=True)

    def clean_work(self) -> None:
        """Remove work directories of dead processes on this host (left by a killed sweep).
        Those of other hosts (SLURM tasks on a shared file system) are left alone."""
        if not self.work.exists():
            return
        host = socket.gethostname()
        for d in self.work.iterdir():
            _run_id, _, rest = d.name.partition(".")
            h, _, pid = rest.rpartition(".")
            if h != host or not pid.isdigit():
                continue
            alive = int(pid) != os.getpid() and _alive(int(pid))
            if not alive:
                shutil.rmtree(d, ignore_errors=True)

    # -------------------------------------------------------- sweep files
    def write_plan(self, sweep) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        meta = {"name": sweep.name, "description": sweep.description, "source": sweep.source,
                "shape": sweep.shape(), "runs": len(sweep.runs), "param_names": sweep.param_names,
                "spec": sweep.spec}
        # Not sorted: the order of the axes in the sweep file is the order of the runs.
        _write_atomic(self.root / SWEEP, json.dumps(meta, indent=2) + "\n")
        _write_atomic(self.root / PLAN, _jsonl([
            {"index": r.index, "run_id": r.run_id, "params": r.params, "scenario": r.scenario.data}
            for r in sweep.runs
        ]))

    def read_plan(self) -> list[dict]:
        return _read_jsonl(self.root / PLAN)

    def manifest_rows(self, plan: list[dict]) -> list[dict]:
        """The manifest as the run directories say it is now: one row per planned run."""
        rows = []
        for p in plan:
            rec = self.record(p["run_id"]) or {"status": "pending"}
            row = {"index": p["index"], "run_id": p["run_id"], "params": p["params"]}
            row.update({k: rec.get(k) for k in RECORD_FIELDS})
            row["run_dir"] = f"runs/{p['run_id']}"
            rows.append(row)
        return rows

    def write_manifest(self, rows: list[dict]) -> None:
        _write_atomic(self.root / MANIFEST, _jsonl(rows))

    def read_manifest(self) -> list[dict]:
        return _read_jsonl(self.root / MANIFEST)


# ------------------------------------------------------------ loading results

def _cell(v, dtype):
    """A parameter value as its column's type (mixed columns hold text)."""
    if v is None or dtype != pl.String or isinstance(v, str):
        return v
    return json.dumps(v)


def _param_dtype(values: list):
    """A parameter's column type (`param_kind`, which the sweep's checks use too)."""
    return {"bool": pl.Boolean, "int": pl.Int64, "float": pl.Float64, "str": pl.String}[param_kind(values)]


# What fixes a sweep directory's manifest or sweep.json: they are rebuilt from the run directories.
_REBUILD = "run `rdmalab sweep SWEEP.yaml --out DIR` on it again to rebuild it from the run directories"


def _check_manifest(rows: list[dict], path: Path, param_names: list[str]) -> None:
    """Refuse a manifest that is not one rdmalab wrote (edited by hand): a
    run listed twice would count twice in every table, and a line without
    a status or parameters would fail deep inside a plot."""
    seen: set = set()
    for n, row in enumerate(rows, 1):
        where = f"{path}: run {n} of {len(rows)}"
        if not isinstance(row, dict):
            raise CorruptOutput(f"{where} is {type(row).__name__}, not the mapping rdmalab writes; {_REBUILD}")
        for key, ok, allowed in (
            ("index", isinstance(row.get("index"), int), "a whole number"),
            ("run_id", isinstance(row.get("run_id"), str), "the run's id"),
            ("status", row.get("status") in ("pending", "done", "failed"), "pending, done, failed"),
            ("params", isinstance(row.get("params"), dict) and sorted(row["params"]) == sorted(param_names),
             f"a mapping of the sweep's parameters ({', '.join(param_names) or 'none'})"),
            ("run_dir", row.get("run_dir") == f"runs/{row.get('run_id')}", f"runs/{row.get('run_id')}"),
        ):
            if not ok:
                raise CorruptOutput(f"{where}: `{key}` is `{json.dumps(row.get(key))}` — allowed: {allowed}; "
                                    f"{_REBUILD}")
        if row["run_id"] in seen:
            raise CorruptOutput(f"{where}: run `{row['run_id']}` is listed twice, so its rows would count twice; "
                                f"{_REBUILD}")
        seen.add(row["run_id"])


class Results:
    """The runs of a sweep directory, or a single run directory, as tables with the
    parameters as columns. `table("flows")` stacks that table of every finished run,
    with `run_id` and one column per parameter in front."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if (self.path / MANIFEST).exists():
            self.kind = "sweep"
            self.rows = Store(self.path).read_manifest()
            meta = read_json(self.path / SWEEP)
            names = meta.get("param_names")
            if not isinstance(meta.get("name"), str) or not isinstance(names, list) \
                    or not all(isinstance(k, str) for k in names):
                raise CorruptOutput(f"{self.path / SWEEP} lacks the `name` and `param_names` rdmalab writes; "
                                    f"{_REBUILD}")
            self.name = meta["name"]
            self.param_names = list(names)
            _check_manifest(self.rows, self.path / MANIFEST, self.param_names)
        elif (self.path / "summary.json").exists():
            self.kind = "run"
            self.name = read_json(self.path / "summary.json").get("name", self.path.name)
            self.rows = [{"index": 0, "run_id": self.path.name, "params": {}, "status": "done", "run_dir": "."}]
            self.param_names = []
        else:
            raise NotResults(
                f"{self.path} is neither a sweep directory (with {MANIFEST}) nor a run directory (with summary.json)"
            )
        self._dtypes = {k: _param_dtype([r["params"].get(k) for r in self.rows]) for k in self.param_names}
        # A parameter named like a column of any table or of the manifest
        # is `param:KEY` in all of them: one name per parameter, so plots
        # can group every table by the same columns.
        taken = {c for cols in COLUMNS.values() for c, _ in cols}
        taken |= {c for schema in EXTRA_SCHEMAS.values() for c in schema}
        taken |= {"index", "run_id", "run_dir", *RECORD_FIELDS}
        self._columns = {k: f"param:{k}" if k in taken else k for k in self.param_names}
        self._tables: dict[str, pl.DataFrame] = {}

    def ended_early(self) -> str | None:
        """For a single run's directory: `failed` or `interrupted` when its
        summary says it ended so (it has no manifest row to say it), else
        None; None for a sweep, whose manifest gives each run's status."""
        if self.kind != "run":
            return None
        end = read_json(self.path / "summary.json").get("end")
        return end if end in ("failed", "interrupted") else None

    def column(self, param: str) -> str:
        """The column that holds parameter `param` in every table and the
        manifest: its axis key, or `param:KEY` if any of them has a column
        of that name. (`summaries()` prefixes also a parameter named like a
        key of summary.json, such as `cc` or `seed`, there alone.)"""
        return self._columns[param]

    @property
    def param_columns(self) -> list[str]:
        """[`Results.column`] of every parameter, in axis order."""
        return [self._columns[k] for k in self.param_names]

    def done(self) -> list[dict]:
        return [r for r in self.rows if r["status"] == "done"]

    def run_path(self, row: dict) -> Path:
        return self.path / row["run_dir"]

    def _params_frame(self, rows: list[dict]) -> pl.DataFrame:
        cols = {"run_id": pl.Series("run_id", [r["run_id"] for r in rows], pl.String)}
        for k in self.param_names:
            dt = self._dtypes[k]
            c = self.column(k)
            cols[c] = pl.Series(c, [_cell(r["params"].get(k), dt) for r in rows], dt)
        return pl.DataFrame(cols)

    def table(self, name: str) -> pl.DataFrame:
        """Table `name` of every finished run stacked, in run order, parameters first."""
        if name not in self._tables:
            self._tables[name] = self._load(name)
        return self._tables[name]

    def _load(self, name: str) -> pl.DataFrame:
        frames = []
        for row in self.done():
            d = self.run_path(row)
            if name in SCHEMAS:
                df = pl.from_arrow(read_table(d, name))
            elif (d / f"{name}.parquet").exists() or (d / f"{name}.csv").exists():
                f = d / f"{name}.parquet"
                try:
                    if f.exists():
                        df = pl.read_parquet(f)
                    else:
                        f = d / f"{name}.csv"
                        df = pl.read_csv(f, schema_overrides=EXTRA_SCHEMAS.get(name))
                except (OSError, pl.exceptions.PolarsError) as e:
                    raise CorruptOutput(f"{f} cannot be read as rdmalab's {name} table: {e}; "
                                        f"rerun to rewrite it") from None
            else:
                continue
            frames.append(self._with_params(df, row))
        if frames:
            return pl.concat(frames, how="vertical")
        if name in SCHEMAS:
            empty = pl.from_arrow(SCHEMAS[name].empty_table())
        elif name in EXTRA_SCHEMAS:
            empty = pl.DataFrame(schema=EXTRA_SCHEMAS[name])
        else:
            raise KeyError(f"no run in {self.path} has a table `{name}`; allowed: "
                           f"{', '.join(dict.fromkeys([*SCHEMAS, *EXTRA_SCHEMAS]))}")
        return self._with_params(empty, None)

    def _with_params(self, df: pl.DataFrame, row: dict | None) -> pl.DataFrame:
        cols = [pl.lit(row["run_id"] if row else None, pl.String).alias("run_id")]
        for k in self.param_names:
            dt = self._dtypes[k]
            v = _cell(row["params"].get(k), dt) if row else None
            cols.append(pl.lit(v, dt).alias(self.column(k)))
        return df.select(cols + [pl.col(c) for c in df.columns])

    def summaries(self) -> pl.DataFrame:
        """One row per finished run: run_id, parameters, and every key of its summary.json."""
        rows = self.done()
        sums = [read_json(self.run_path(r) / "summary.json") for r in rows]
        if not rows:
            return self._params_frame([])
        df = pl.DataFrame(sums)
        params = self._params_frame(rows)
        return pl.concat([params.rename({c: f"param:{c}" for c in self.param_columns if c in df.columns}), df],
                         how="horizontal")

    def manifest(self) -> pl.DataFrame:
        """The manifest as a table: index, run_id, parameters, status, timings, versions."""
        base = pl.DataFrame({"index": [r["index"] for r in self.rows]}, schema={"index": pl.Int64})
        rest = pl.DataFrame(
            {k: [r.get(k) for r in self.rows] for k in RECORD_FIELDS + ("run_dir",)},
            schema={k: (pl.Float64 if k == "wall_seconds" else pl.String) for k in RECORD_FIELDS + ("run_dir",)},
        )
        return pl.concat([base, self._params_frame(self.rows), rest], how="horizontal")


def load_results(path: str | Path, table: str = "flows") -> pl.DataFrame:
    """Table `table` of every finished run of a sweep (or of one run directory) as one
    Polars frame with `run_id` and the parameters as columns (`.to_arrow()` for Arrow)."""
    return Results(path).table(table)
