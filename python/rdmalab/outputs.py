"""Output files of a run. Columns are documented in docs/outputs.md.

The core writes each table as CSV; here each is also written as Parquet with
the table's typed columns (so an empty table still has them), by the core's
own writer (`rdmalab._core.csv_to_parquet`), and the run's summary and
resolved scenario are saved beside them. Writing a run's outputs imports no
pyarrow: its import alone took 0.3 s of CPU and 58 MB per run. Reading a
table back (`read_table`, `table_from_csv`, `SCHEMAS`) does.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Each table's columns: name and type (pyarrow's name for it), in order.
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "flows": [
        ("flow_id", "uint32"),
        ("qp", "uint32"),
        ("src", "uint32"),
        ("dst", "uint32"),
        ("src_name", "string"),
        ("dst_name", "string"),
        ("verb", "string"),
        ("udp_sport", "uint16"),
        ("size_bytes", "uint64"),
        ("start_ps", "uint64"),
        ("finish_ps", "uint64"),
        ("fct_ps", "uint64"),
        ("ideal_fct_ps", "uint64"),
        ("slowdown", "float64"),
        ("retransmitted_packets", "uint64"),
        ("timeouts", "uint64"),
        ("tenant", "string"),
        ("piece", "bool"),
    ],
    "qp_samples": [
        ("time_ps", "uint64"),
        ("qp", "uint32"),
        ("dequeue_rate_bps", "uint64"),
        ("throughput_bps", "uint64"),
        ("bytes_in_flight", "uint64"),
        ("window_bytes", "uint64"),
        ("udp_sport", "uint16"),
    ],
    "port_samples": [
        ("time_ps", "uint64"),
        ("node", "uint32"),
        ("node_name", "string"),
        ("port", "uint32"),
        ("queued_bytes", "uint64"),
    ],
    # Written only with `records.counters`; read as empty when absent.
    "counter_samples": [
        ("time_ps", "uint64"),
        ("ecn_marked_packets", "uint64"),
        ("cnps_sent", "uint64"),
        ("pfc_pauses", "uint64"),
        ("pfc_resumes", "uint64"),
        ("dropped_frames", "uint64"),
        ("retransmitted_packets", "uint64"),
        ("timeouts", "uint64"),
    ],
    # Written only when some link goes down (`links[].down`); read as empty when absent.
    "link_events": [
        ("time_ps", "uint64"),
        ("event", "string"),
        ("link", "uint32"),
        ("node_a", "uint32"),
        ("node_a_name", "string"),
        ("node_b", "uint32"),
        ("node_b_name", "string"),
    ],
    "pfc_events": [
        ("time_ps", "uint64"),
        ("node", "uint32"),
        ("node_name", "string"),
        ("port", "uint32"),
        ("from_node", "uint32"),
        ("class", "uint8"),
        ("event", "string"),
    ],
    "drops": [
        ("node", "uint32"),
        ("node_name", "string"),
        ("port", "uint32"),
        ("reason", "string"),
        ("frames", "uint64"),
        ("bytes", "uint64"),
    ],
    "control_delays": [
        ("time_ps", "uint64"),
        ("qp", "uint32"),
        ("event", "string"),
        ("delay_ps", "uint64"),
        ("coalesced", "uint32"),
        ("trigger_ps", "uint64"),
        ("wait_ps", "uint64"),
        ("processing_ps", "uint64"),
        ("install_ps", "uint64"),
    ],
    "probes": [
        ("time_ps", "uint64"),
        ("qp", "uint32"),
        ("udp_sport", "uint16"),
        ("rtt_ps", "uint64"),
        ("lost", "bool"),
    ],
    "apps": [
        ("app", "uint32"),
        ("name", "string"),
        ("qp", "int64"),
        ("verb", "string"),
        ("message_bytes", "uint64"),
        ("queue_depth", "uint32"),
        ("messages_completed", "uint64"),
        ("bytes_completed", "uint64"),
        ("latency_mean_ps", "uint64"),
        ("latency_p50_ps", "uint64"),
        ("latency_p99_ps", "uint64"),
        ("tenant", "string"),
    ],
    "nic_resources": [
        ("node", "uint32"),
        ("node_name", "string"),
        ("preset", "string"),
        ("qpc_hits", "uint64"),
        ("qpc_misses", "uint64"),
        ("mtt_hits", "uint64"),
        ("mtt_misses", "uint64"),
        ("wqe_hits", "uint64"),
        ("wqe_misses", "uint64"),
        ("pcie_payload_bytes", "uint64"),
        ("pcie_payload_requests", "uint64"),
        ("pcie_wqe_bytes", "uint64"),
        ("pcie_wqe_requests", "uint64"),
        ("pcie_qpc_bytes", "uint64"),
        ("pcie_qpc_requests", "uint64"),
        ("pcie_mtt_bytes", "uint64"),
        ("pcie_mtt_requests", "uint64"),
        ("pcie_bitmap_bytes", "uint64"),
        ("pcie_bitmap_requests", "uint64"),
        ("stall_ps", "uint64"),
        ("unit_waits", "uint64"),
    ],
    "policy_actions": [
        ("time_ps", "uint64"),
        ("node", "uint32"),
        ("node_name", "string"),
        ("policy", "string"),
        ("action", "string"),
    ],
    "tenants": [
        ("tenant", "string"),
        ("qps", "uint64"),
        ("flows", "uint64"),
        ("flows_completed", "uint64"),
        ("pieces", "uint64"),
        ("bytes_delivered", "uint64"),
        ("throughput_bps", "float64"),
        ("share", "float64"),
        ("slowdown_p50", "float64"),
        ("slowdown_p99", "float64"),
    ],
    "collectives": [
        ("collective", "string"),
        ("op", "string"),
        ("iteration", "uint32"),
        ("ranks", "uint32"),
        ("bytes", "uint64"),
        ("flows", "uint64"),
        ("flows_arrived", "uint64"),
        ("launched_ps", "uint64"),
        ("done_ps", "uint64"),
        ("time_ps", "uint64"),
        ("algbw_bps", "float64"),
        ("busbw_bps", "float64"),
    ],
    "collective_ranks": [
        ("collective", "string"),
        ("iteration", "uint32"),
        ("rank", "uint32"),
        ("host_name", "string"),
        ("compute_ps", "uint64"),
        ("launched_ps", "uint64"),
        ("done_ps", "uint64"),
        ("comm_ps", "uint64"),
    ],
    "nic_memory": [
        ("structure", "string"),
        ("category", "string"),
        ("qps", "uint64"),
        ("typical_bytes", "uint64"),
        ("on_chip_bytes", "uint64"),
        ("how", "string"),
    ],
}


#: Tables a run writes only when asked (`records.counters`) or when there is
#: something to say (`link_events`: some link goes down); absent means empty.
OPTIONAL_TABLES = {"counter_samples", "link_events"}


_SCHEMAS: dict | None = None


def schemas() -> dict:
    """Each table's pyarrow schema, from `COLUMNS` (imports pyarrow once)."""
    global _SCHEMAS
    if _SCHEMAS is None:
        import pyarrow as pa

        def typ(name: str):
            return pa.bool_() if name == "bool" else getattr(pa, name)()

        _SCHEMAS = {name: pa.schema([(c, typ(t)) for c, t in cols]) for name, cols in COLUMNS.items()}
    return _SCHEMAS


def __getattr__(name: str):
    # `outputs.SCHEMAS`: built when first asked for, since writing a run's
    # outputs never needs pyarrow.
    if name == "SCHEMAS":
        return schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def table_from_csv(data: bytes, name: str):
    """Table `name` (a pyarrow Table) from the core's CSV bytes, typed by its schema."""
    import io

    import pyarrow.csv as pacsv

    schema = schemas()[name]
    return pacsv.read_csv(
        io.BytesIO(data),
        convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=False),
    ).select(schema.names).cast(schema)


class CorruptOutput(Exception):
    """A file of a run directory is missing, truncated or not what rdmalab
    wrote; the message names the file and what is wrong with it."""


def read_json(path: str | Path) -> dict:
    """A JSON file rdmalab wrote (summary.json, scenario.json, sweep.json)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorruptOutput(f"{path} is missing; rerun to write it") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CorruptOutput(f"{path} cannot be read as the JSON rdmalab writes ({e}); "
                            f"rerun to rewrite it") from None
    if not isinstance(data, dict):
        raise CorruptOutput(f"{path} holds {type(data).__name__}, not the mapping rdmalab writes; rerun to rewrite it")
    return data


#: Nullable columns added after a release: run directories written before
#: them still read, with the column null (unknown).
ADDED_LATER: dict[str, tuple[str, ...]] = {"qp_samples": ("window_bytes",)}


def read_table(out_dir: str | Path, name: str):
    """Read one table of a run directory (Parquet if present, else CSV),
    checked to have the table's columns; a damaged file is a CorruptOutput."""
    out = Path(out_dir)
    pqf = out / f"{name}.parquet"
    csvf = out / f"{name}.csv"
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    schema = schemas()[name]
    try:
        if pqf.exists():
            f = pqf
            t = pq.read_table(pqf)
        elif csvf.exists():
            f = csvf
            t = pacsv.read_csv(
                csvf,
                convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=False),
            )
        elif name in OPTIONAL_TABLES:
            return schema.empty_table()
        else:
            raise CorruptOutput(f"{out} has no {name} table ({name}.parquet or {name}.csv); "
                                f"rerun the scenario to write it")
    except (OSError, pa.ArrowException) as e:
        raise CorruptOutput(f"{f} cannot be read as rdmalab's {name} table: {e}; rerun to rewrite it") from None
    for c in ADDED_LATER.get(name, ()):
        if c not in t.column_names:
            # A run written before the column existed: it is unknown there.
            t = t.append_column(schema.field(c), pa.nulls(t.num_rows, schema.field(c).type))
    missing = [c for c in schema.names if c not in t.column_names]
    if missing:
        raise CorruptOutput(f"{f} lacks the {name} table's columns {', '.join(missing)} "
                            f"(it has {', '.join(t.column_names) or 'none'}); rerun to rewrite it")
    return t.select(schema.names)


def write_outputs(out: Path, summary: dict, scenario, parquet: bool = True) -> None:
    if parquet:
        from rdmalab import _core

        for name, cols in COLUMNS.items():
            if name in OPTIONAL_TABLES and not (out / f"{name}.csv").exists():
                continue
            _core.csv_to_parquet(out / f"{name}.csv", out / f"{name}.parquet", cols)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (out / "scenario.json").write_text(indented_json(scenario.data) + "\n")


def indented_json(data) -> str:
    """``json.dumps(data, indent=2, sort_keys=True)``, byte for byte, at the C
    encoder's speed (Python's own indents in pure Python: the scenario.json
    of 100,000 flows took seconds)."""
    from rdmalab import _core

    return _core.indent_json(json.dumps(data, sort_keys=True, separators=(",", ":")))


class OutputDirError(Exception):
    """The output directory cannot take a run's files."""


#: Files a run writes besides the tables (the ns-3 HPCC-style ones and the JSON).
OTHER_FILES = ["summary.json", "scenario.json", "fct.txt", "pfc.txt", "qlen.txt", "packets.pcap"]


#: What else a run directory may hold: the report, plots and figure list, a sweep run's record.
RUN_DIR_EXTRAS = {"report.html", "plots", "figures.json", "run.json"}


def foreign_files(out: str | Path, allowed: set[str]) -> list[str]:
    """The names in directory `out` (if it exists) that are not in `allowed`, sorted."""
    p = Path(out)
    if not p.is_dir():
        return []
    return sorted(f.name for f in p.iterdir() if f.name not in allowed)


def refuse_foreign_run_dir(out: str | Path) -> None:
    """`--out` of a run: a new or empty directory, or an earlier run's (its files are
    replaced); a directory holding anything else is refused, so no one's files are
    mixed with a run's or removed."""
    allowed = {f"{t}.{ext}" for t in COLUMNS for ext in ("csv", "parquet")} | set(OTHER_FILES) | RUN_DIR_EXTRAS
    other = foreign_files(out, allowed)
    if other:
        shown = ", ".join(other[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
        raise OutputDirError(f"--out: `{out}` is not empty and not an earlier run's directory (it holds {shown}); "
                             f"give a new or empty directory (an earlier run's directory is reused: its files are "
                             f"replaced)")


def prepare_out_dir(out: str | Path, name: str = "out_dir") -> int:
    """Make `out` ready for a run before it starts: create it, check that it
    can be written, and remove the files an earlier run left there (its
    tables, summary, ns-3-style files, report, figure list and the images
    and tables in plots/), so nothing stale is read or shown with the new
    ones. Returns how many files were removed. `name` is what the caller
    called the directory, for its errors: `rdmalab.run`'s `out_dir`, the
    command line's `--out`."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise OutputDirError(f"{name}: `{p}` is a file; give a directory (created if missing)")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".rdmalab-write-check"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise OutputDirError(f"{name}: `{p}` cannot be written ({e.strerror})") from None
    # The report, plots and figure list describe the earlier run too.
    names = [f"{t}.{ext}" for t in COLUMNS for ext in ("csv", "parquet")] + OTHER_FILES + ["report.html",
                                                                                         "figures.json"]
    removed = 0
    for n in names:
        f = p / n
        if f.is_file():
            f.unlink()
            removed += 1
    plots = p / "plots"
    if plots.is_dir():
        for f in plots.iterdir():
            if f.is_file() and f.suffix in PLOT_SUFFIXES:
                f.unlink()
                removed += 1
        if not any(plots.iterdir()):
            plots.rmdir()
    return removed


#: What `rdmalab plot` and case figures write into a run's plots/ directory.
PLOT_SUFFIXES = {".png", ".svg", ".csv"}
