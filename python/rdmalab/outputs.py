"""Output files of a run. Columns are documented in docs/outputs.md.

The core writes each table as CSV; here each is also written as Parquet with
an explicit schema (so an empty table still has typed columns), and the run's
summary and resolved scenario are saved beside them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

SCHEMAS: dict[str, pa.Schema] = {
    "flows": pa.schema(
        [
            ("flow_id", pa.uint32()),
            ("qp", pa.uint32()),
            ("src", pa.uint32()),
            ("dst", pa.uint32()),
            ("src_name", pa.string()),
            ("dst_name", pa.string()),
            ("verb", pa.string()),
            ("udp_sport", pa.uint16()),
            ("size_bytes", pa.uint64()),
            ("start_ps", pa.uint64()),
            ("finish_ps", pa.uint64()),
            ("fct_ps", pa.uint64()),
            ("ideal_fct_ps", pa.uint64()),
            ("slowdown", pa.float64()),
            ("retransmitted_packets", pa.uint64()),
            ("timeouts", pa.uint64()),
            ("tenant", pa.string()),
            ("piece", pa.bool_()),
        ]
    ),
    "qp_samples": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("qp", pa.uint32()),
            ("dequeue_rate_bps", pa.uint64()),
            ("throughput_bps", pa.uint64()),
            ("bytes_in_flight", pa.uint64()),
            ("udp_sport", pa.uint16()),
        ]
    ),
    "port_samples": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("node", pa.uint32()),
            ("node_name", pa.string()),
            ("port", pa.uint32()),
            ("queued_bytes", pa.uint64()),
        ]
    ),
    # Written only with `records.counters`; read as empty when absent.
    "counter_samples": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("ecn_marked_packets", pa.uint64()),
            ("cnps_sent", pa.uint64()),
            ("pfc_pauses", pa.uint64()),
            ("pfc_resumes", pa.uint64()),
            ("dropped_frames", pa.uint64()),
            ("retransmitted_packets", pa.uint64()),
            ("timeouts", pa.uint64()),
        ]
    ),
    # Written only when some link goes down (`links[].down`); read as empty when absent.
    "link_events": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("event", pa.string()),
            ("link", pa.uint32()),
            ("node_a", pa.uint32()),
            ("node_a_name", pa.string()),
            ("node_b", pa.uint32()),
            ("node_b_name", pa.string()),
        ]
    ),
    "pfc_events": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("node", pa.uint32()),
            ("node_name", pa.string()),
            ("port", pa.uint32()),
            ("from_node", pa.uint32()),
            ("class", pa.uint8()),
            ("event", pa.string()),
        ]
    ),
    "drops": pa.schema(
        [
            ("node", pa.uint32()),
            ("node_name", pa.string()),
            ("port", pa.uint32()),
            ("reason", pa.string()),
            ("frames", pa.uint64()),
            ("bytes", pa.uint64()),
        ]
    ),
    "control_delays": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("qp", pa.uint32()),
            ("event", pa.string()),
            ("delay_ps", pa.uint64()),
            ("coalesced", pa.uint32()),
            ("trigger_ps", pa.uint64()),
            ("wait_ps", pa.uint64()),
            ("processing_ps", pa.uint64()),
            ("install_ps", pa.uint64()),
        ]
    ),
    "probes": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("qp", pa.uint32()),
            ("udp_sport", pa.uint16()),
            ("rtt_ps", pa.uint64()),
            ("lost", pa.bool_()),
        ]
    ),
    "apps": pa.schema(
        [
            ("app", pa.uint32()),
            ("name", pa.string()),
            ("qp", pa.int64()),
            ("verb", pa.string()),
            ("message_bytes", pa.uint64()),
            ("queue_depth", pa.uint32()),
            ("messages_completed", pa.uint64()),
            ("bytes_completed", pa.uint64()),
            ("latency_mean_ps", pa.uint64()),
            ("latency_p50_ps", pa.uint64()),
            ("latency_p99_ps", pa.uint64()),
            ("tenant", pa.string()),
        ]
    ),
    "nic_resources": pa.schema(
        [
            ("node", pa.uint32()),
            ("node_name", pa.string()),
            ("preset", pa.string()),
            ("qpc_hits", pa.uint64()),
            ("qpc_misses", pa.uint64()),
            ("mtt_hits", pa.uint64()),
            ("mtt_misses", pa.uint64()),
            ("wqe_hits", pa.uint64()),
            ("wqe_misses", pa.uint64()),
            ("pcie_payload_bytes", pa.uint64()),
            ("pcie_payload_requests", pa.uint64()),
            ("pcie_wqe_bytes", pa.uint64()),
            ("pcie_wqe_requests", pa.uint64()),
            ("pcie_qpc_bytes", pa.uint64()),
            ("pcie_qpc_requests", pa.uint64()),
            ("pcie_mtt_bytes", pa.uint64()),
            ("pcie_mtt_requests", pa.uint64()),
            ("pcie_bitmap_bytes", pa.uint64()),
            ("pcie_bitmap_requests", pa.uint64()),
            ("stall_ps", pa.uint64()),
            ("unit_waits", pa.uint64()),
        ]
    ),
    "policy_actions": pa.schema(
        [
            ("time_ps", pa.uint64()),
            ("node", pa.uint32()),
            ("node_name", pa.string()),
            ("policy", pa.string()),
            ("action", pa.string()),
        ]
    ),
    "tenants": pa.schema(
        [
            ("tenant", pa.string()),
            ("qps", pa.uint64()),
            ("flows", pa.uint64()),
            ("flows_completed", pa.uint64()),
            ("pieces", pa.uint64()),
            ("bytes_delivered", pa.uint64()),
            ("throughput_bps", pa.float64()),
            ("share", pa.float64()),
            ("slowdown_p50", pa.float64()),
            ("slowdown_p99", pa.float64()),
        ]
    ),
    "nic_memory": pa.schema(
        [
            ("structure", pa.string()),
            ("category", pa.string()),
            ("qps", pa.uint64()),
            ("typical_bytes", pa.uint64()),
            ("on_chip_bytes", pa.uint64()),
            ("how", pa.string()),
        ]
    ),
}


#: Tables a run writes only when asked (`records.counters`) or when there is
#: something to say (`link_events`: some link goes down); absent means empty.
OPTIONAL_TABLES = {"counter_samples", "link_events"}


def table_from_csv(data: bytes, name: str) -> pa.Table:
    """Table `name` from the core's CSV bytes, typed by its schema."""
    import io

    schema = SCHEMAS[name]
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


def read_table(out_dir: str | Path, name: str) -> pa.Table:
    """Read one table of a run directory (Parquet if present, else CSV),
    checked to have the table's columns; a damaged file is a CorruptOutput."""
    out = Path(out_dir)
    pqf = out / f"{name}.parquet"
    csvf = out / f"{name}.csv"
    schema = SCHEMAS[name]
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
    missing = [c for c in schema.names if c not in t.column_names]
    if missing:
        raise CorruptOutput(f"{f} lacks the {name} table's columns {', '.join(missing)} "
                            f"(it has {', '.join(t.column_names) or 'none'}); rerun to rewrite it")
    return t.select(schema.names)


def write_outputs(out: Path, summary: dict, scenario, parquet: bool = True) -> None:
    if parquet:
        for name, schema in SCHEMAS.items():
            if name in OPTIONAL_TABLES and not (out / f"{name}.csv").exists():
                continue
            table = pacsv.read_csv(
                out / f"{name}.csv",
                convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=False),
            ).select(schema.names)
            pq.write_table(table.cast(schema), out / f"{name}.parquet", compression="zstd")
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
    allowed = {f"{t}.{ext}" for t in SCHEMAS for ext in ("csv", "parquet")} | set(OTHER_FILES) | RUN_DIR_EXTRAS
    other = foreign_files(out, allowed)
    if other:
        shown = ", ".join(other[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
        raise OutputDirError(f"--out: `{out}` is not empty and not an earlier run's directory (it holds {shown}); "
                             f"give a new or empty directory (an earlier run's directory is reused: its files are "
                             f"replaced)")


def prepare_out_dir(out: str | Path) -> int:
    """Make `out` ready for a run before it starts: create it, check that it
    can be written, and remove the files an earlier run left there (its
    tables, summary and ns-3-style files), so no stale table is read with
    the new ones. Returns how many files were removed."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise OutputDirError(f"--out: `{p}` is a file; give a directory (created if missing)")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".rdmalab-write-check"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise OutputDirError(f"--out: `{p}` cannot be written ({e.strerror})") from None
    names = [f"{t}.{ext}" for t in SCHEMAS for ext in ("csv", "parquet")] + OTHER_FILES
    removed = 0
    for n in names:
        f = p / n
        if f.is_file():
            f.unlink()
            removed += 1
    return removed
