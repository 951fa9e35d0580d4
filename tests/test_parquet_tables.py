"""The Parquet tables a run writes come from the core's own writer
(`_core.csv_to_parquet`), not pyarrow. They must read back, in pyarrow and
Polars, as the CSV tables read with the tables' typed columns: the same
types, the same values, the same nulls."""

import json
import random
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from conftest import ROOT

from rdmalab import _core
from rdmalab.outputs import COLUMNS, OPTIONAL_TABLES, schemas, table_from_csv

TYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int64", "float64", "string"]
NULLS = ["", "NaN", "nan", "null", "NULL", "NA", "N/A", "n/a", "#N/A", "-NaN"]


def as_csv_reader_reads_it(csv_path, cols) -> pa.Table:
    """The table as pyarrow's CSV reader types it: the reading the Parquet file must equal."""
    schema = pa.schema([(c, pa.bool_() if t == "bool" else getattr(pa, t)()) for c, t in cols])
    t = pacsv.read_csv(csv_path, convert_options=pacsv.ConvertOptions(column_types=schema, strings_can_be_null=False))
    return t.select(schema.names).cast(schema)


def cell(t: str, rng: random.Random) -> str:
    if t != "string" and rng.random() < 0.1:
        return rng.choice(NULLS)
    if t == "bool":
        return rng.choice(["true", "false", "True", "FALSE", "1", "0"])
    if t == "int64":
        return str(rng.choice([-(2**63), 2**63 - 1, 0, rng.randint(-(10**12), 10**12)]))
    if t == "float64":
        return rng.choice(["inf", "-inf", "0.000000", f"{rng.uniform(-1e9, 1e9):.6f}", "1e-300"])
    if t == "string":
        return rng.choice(["", "h0", "tenant-ä", "NaN", "x" * rng.randint(0, 40)])
    bits = int(t[4:])
    return str(rng.choice([0, 2**bits - 1, rng.randrange(2**bits)]))


@pytest.mark.parametrize("rows", [0, 1, 65_536, 2 * 65_536 + 3])
def test_every_type_reads_back_as_the_typed_csv_reader_reads_it(tmp_path, rows):
    # Rows past 65,536 span several data pages; nulls fall anywhere.
    rng = random.Random(rows)
    cols = [(f"c_{t}", t) for t in TYPES] + [("c_uint64_2", "uint64")]
    lines = [",".join(["extra"] + [c for c, _ in cols])]
    for _ in range(rows):
        lines.append(",".join(["z"] + [cell(t, rng) for _, t in cols]))
    csv = tmp_path / "t.csv"
    csv.write_text("\n".join(lines) + "\n")
    _core.csv_to_parquet(csv, tmp_path / "t.parquet", cols)
    want = as_csv_reader_reads_it(csv, cols)
    got = pq.read_table(tmp_path / "t.parquet")
    assert got.schema == want.schema
    assert got.equals(want)
    assert pl.read_parquet(tmp_path / "t.parquet").equals(pl.from_arrow(want))


def stats_of(path):
    """Each column's statistics as pyarrow reads them: (nulls, min, max), or None if it reads none."""
    rg = pq.ParquetFile(path).metadata.row_group(0)
    out = {}
    for i in range(rg.num_columns):
        c = rg.column(i)
        s = c.statistics
        assert c.is_stats_set and s is not None, c.path_in_schema
        out[c.path_in_schema] = (s.null_count, s.min, s.max) if s.has_min_max else (s.null_count, None, None)
    return out


@pytest.mark.parametrize("rows", [1, 40, 2 * 65_536 + 3])
def test_every_column_carries_the_nulls_least_and_greatest_of_its_values(tmp_path, rows):
    # What a reader skips files by: the statistics must be those of the values it reads back.
    rng = random.Random(rows)
    cols = [(f"c_{t}", t) for t in TYPES]
    lines = [",".join(c for c, _ in cols)]
    for _ in range(rows):
        lines.append(",".join(cell(t, rng) for _, t in cols))
    csv = tmp_path / "t.csv"
    csv.write_text("\n".join(lines) + "\n")
    _core.csv_to_parquet(csv, tmp_path / "t.parquet", cols)
    table = pq.read_table(tmp_path / "t.parquet")
    for name, (nulls, lo, hi) in stats_of(tmp_path / "t.parquet").items():
        values = [v for v in table.column(name).to_pylist() if v is not None]
        assert nulls == table.num_rows - len(values), name
        if not values:
            assert (lo, hi) == (None, None), name
            continue
        if name == "c_string":  # text is ordered by its UTF-8 bytes
            assert (lo.encode(), hi.encode()) == (min(v.encode() for v in values), max(v.encode() for v in values))
        else:
            assert (lo, hi) == (min(values), max(values)), name


def test_statistics_follow_the_formats_rules_for_unsigned_zeros_and_nan(tmp_path):
    # Unsigned columns order as unsigned though stored in signed words; a float
    # range never holds NaN, starts at -0.0 and ends at +0.0 when it reaches zero;
    # a column of nulls only has no range.
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,x,y,n,f\n4294967295,18446744073709551615,0.0,NAN,,true\n"
                   "1,2,-0.0,NAN,,true\n7,9,,NAN,,true\n")
    cols = [("a", "uint32"), ("b", "uint64"), ("x", "float64"), ("y", "float64"), ("n", "int64"), ("f", "bool")]
    _core.csv_to_parquet(csv, tmp_path / "t.parquet", cols)
    st = stats_of(tmp_path / "t.parquet")
    assert st["a"] == (0, 1, 4294967295)
    assert st["b"] == (0, 2, 18446744073709551615)
    nulls, lo, hi = st["x"]
    assert (nulls, lo, hi) == (1, 0.0, 0.0) and str(lo) == "-0.0" and str(hi) == "0.0"
    assert st["y"] == (0, None, None)  # NaN values only: no range
    assert st["n"] == (3, None, None)
    assert st["f"] == (0, True, True)


def test_a_query_over_runs_skips_the_files_its_filter_excludes(tmp_path):
    # The small run's data pages are overwritten with garbage after writing: a
    # query whose filter its statistics exclude must not read them, so it succeeds
    # only if the reader skipped that file by its statistics.
    for i, sizes in enumerate([(100, 200), (5_000_000, 6_000_000)]):
        csv = tmp_path / f"r{i}.csv"
        csv.write_text("size_bytes,fct_ps\n" + "".join(f"{s},{s * 3}\n" for s in sizes))
        _core.csv_to_parquet(csv, tmp_path / f"r{i}.parquet", [("size_bytes", "uint64"), ("fct_ps", "uint64")])
    small = tmp_path / "r0.parquet"
    data = bytearray(small.read_bytes())
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[4:footer] = b"\xff" * (footer - 4)
    small.write_bytes(bytes(data))
    with pytest.raises(Exception):
        pl.read_parquet(small)  # the garbage is there to be found
    q = pl.scan_parquet(tmp_path / "r*.parquet").filter(pl.col("size_bytes") > 1_000_000)
    assert q.collect()["size_bytes"].to_list() == [5_000_000, 6_000_000]
    assert pq.read_table(small, filters=[("size_bytes", ">", 1_000_000)]).num_rows == 0


def test_long_text_spans_pages_cut_by_bytes(tmp_path):
    # 40 rows of 100 KB: pages end at about 1 MiB of values, not at 65,536 rows.
    cols = [("n", "uint32"), ("s", "string"), ("f", "bool")]
    rows = [f"{i},{chr(97 + i % 26) * 100_000},{i % 3 == 0}" for i in range(40)]
    csv = tmp_path / "t.csv"
    csv.write_text("n,s,f\n" + "\n".join(rows) + "\n")
    _core.csv_to_parquet(csv, tmp_path / "t.parquet", cols)
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.row_group(0).column(1).total_uncompressed_size > 4_000_000
    assert pq.read_table(tmp_path / "t.parquet").equals(as_csv_reader_reads_it(csv, cols))


def test_a_run_writes_every_table_as_its_csv_reads(tmp_path):
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-m", "rdmalab", "run", ROOT / "examples/dumbbell-dcqcn.yaml",
                        "--out", out, "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    written = 0
    for name in COLUMNS:
        if name in OPTIONAL_TABLES and not (out / f"{name}.csv").exists():
            assert not (out / f"{name}.parquet").exists()
            continue
        got = pq.read_table(out / f"{name}.parquet")
        assert got.schema == schemas()[name], name
        assert got.equals(table_from_csv((out / f"{name}.csv").read_bytes(), name)), name
        written += got.num_rows
    assert written > 1000


def test_writing_a_run_imports_no_pyarrow(tmp_path):
    # pyarrow's import took 0.3 s of CPU per run; only reading tables back needs it.
    code = ("import sys, runpy; sys.argv = ['rdmalab', 'run', sys.argv[1], '--out', sys.argv[2], '--quiet'];\n"
            "try:\n    runpy.run_module('rdmalab', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'numpy', 'polars')))")
    r = subprocess.run([sys.executable, "-c", code, ROOT / "examples/dumbbell-dcqcn.yaml", tmp_path / "o"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "o" / "flows.parquet").stat().st_size > 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["flows_completed"] > 0


def test_bad_cells_and_types_are_errors_that_name_them(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n300,y\n")
    with pytest.raises(ValueError, match=r"t\.csv, line 3, column `a`: `300` is not a whole number from 0 to 255"):
        _core.csv_to_parquet(csv, tmp_path / "t.parquet", [("a", "uint8"), ("b", "string")])
    with pytest.raises(ValueError, match=r"column `b`: type `text` is not one .* allowed: bool, uint8, .*string"):
        _core.csv_to_parquet(csv, tmp_path / "t.parquet", [("a", "uint16"), ("b", "text")])
    with pytest.raises(ValueError, match=r"no column `c`; the header has a, b"):
        _core.csv_to_parquet(csv, tmp_path / "t.parquet", [("c", "uint16")])
    assert not (tmp_path / "t.parquet").exists()
