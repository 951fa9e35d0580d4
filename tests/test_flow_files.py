"""Flow lists from files (`workload.flow_file`, CSV or Parquet): the same
flows as the YAML list, read fast, with bad rows refused by line."""

import polars as pl
import pytest

import rdmalab

BASE = """\
name: flow-file
seed: 1
duration: 1ms
topology: {{kind: single_switch, hosts: 4, host_link: {{rate: 100Gbps, delay: 1us}}}}
workload:
{workload}
"""
FLOWS = [("h0", "h3", "100KB", "0us"), ("h1", "h3", "2MB", "5us"), ("h2", "h0", "64KiB", "12us")]


def scenario(tmp_path, workload: str, name="s.yaml"):
    f = tmp_path / name
    f.write_text(BASE.format(workload=workload))
    return f


def test_csv_and_parquet_files_give_the_flows_of_the_yaml_list(tmp_path):
    yaml_list = "  flows:\n" + "".join(f"    - {{src: {s}, dst: {d}, size: {z}, start: {t}}}\n" for s, d, z, t in FLOWS)
    (tmp_path / "f.csv").write_text("src,dst,size,start\n" + "".join(f"{s},{d},{z},{t}\n" for s, d, z, t in FLOWS))
    pl.DataFrame({"src": [f[0] for f in FLOWS], "dst": [f[1] for f in FLOWS], "size": [f[2] for f in FLOWS],
                  "start": [f[3] for f in FLOWS]}).write_parquet(tmp_path / "f.parquet")
    a = rdmalab.run(scenario(tmp_path, yaml_list))
    b = rdmalab.run(scenario(tmp_path, "  flow_file: f.csv", "b.yaml"))
    c = rdmalab.run(scenario(tmp_path, "  flow_file: f.parquet", "c.yaml"))
    assert a.flows.height == 3
    assert a.flows.equals(b.flows) and a.flows.equals(c.flows)


def test_numbers_in_unit_named_columns_give_the_same_flows(tmp_path):
    """A Parquet file of integers, as a generator writes it: `size_bytes`
    and `start_ps`/`_ns`/`_us` hold bare numbers in their column's unit.
    A run's own flows table replays that way, its flows exactly."""
    yaml_list = "  flows:\n" + "".join(f"    - {{src: {s}, dst: {d}, size: {z}, start: {t}}}\n" for s, d, z, t in FLOWS)
    a = rdmalab.run(scenario(tmp_path, yaml_list))
    sizes, starts_us = [100_000, 2_000_000, 65_536], [0, 5, 12]
    for unit, scale in (("ps", 10**6), ("ns", 10**3), ("us", 1)):
        pl.DataFrame({"src": [f[0] for f in FLOWS], "dst": [f[1] for f in FLOWS], "size_bytes": sizes,
                      f"start_{unit}": [t * scale for t in starts_us]}).write_parquet(tmp_path / f"{unit}.parquet")
        b = rdmalab.run(scenario(tmp_path, f"  flow_file: {unit}.parquet", f"{unit}.yaml"))
        assert a.flows.equals(b.flows), unit
    (tmp_path / "f.csv").write_text("src,dst,size_bytes,start_us\n" + "".join(
        f"{f[0]},{f[1]},{z},{t}.0\n" for f, z, t in zip(FLOWS, sizes, starts_us)))
    assert a.flows.equals(rdmalab.run(scenario(tmp_path, "  flow_file: f.csv", "csv.yaml")).flows)
    a.flows.select(pl.col("src_name").alias("src"), pl.col("dst_name").alias("dst"), "size_bytes", "start_ps",
                   "verb").write_parquet(tmp_path / "replay.parquet")
    assert a.flows.equals(rdmalab.run(scenario(tmp_path, "  flow_file: replay.parquet", "r.yaml")).flows)


@pytest.mark.parametrize("csv,says", [
    ("src,dst,size_bytes\nh0,h1,4KB\n",
     "workload.flow_file[line 2].size_bytes: `4KB` — `4KB` is not a number; a `size_bytes` column holds plain numbers in B"),
    ("src,dst,size_bytes\nh0,h1,-5\n", "workload.flow_file[line 2].size_bytes: `-5` — `-5B` is negative"),
    ("src,dst,size_bytes,start_ns\nh0,h1,5,nan\n", "workload.flow_file[line 2].start_ns: `nan` — `nan` is not a number"),
    ("src,dst,size_bytes,start_us\nh0,h1,5,4e9\n", "workload.flow_file[line 2].start_us: `4e9` — `4e9us` is too large"),
    ("src,dst,size,size_bytes\nh0,h1,5B,5\n", "columns size, size_bytes all give the size; allowed: one of them"),
    ("src,dst,size_bytes,start_ps,start\nh0,h1,5,1,1us\n", "columns start_ps, start all give the start"),
])
def test_bad_numbers_in_unit_named_columns_are_refused_alone(tmp_path, csv, says):
    (tmp_path / "f.csv").write_text(csv)
    with pytest.raises(rdmalab.ScenarioError) as e:
        rdmalab.run(scenario(tmp_path, "  flow_file: f.csv"))
    assert says in str(e.value), str(e.value)
    assert "1 problem" in str(e.value) or "problems" not in str(e.value), str(e.value)


def test_a_flow_file_and_a_list_add_up(tmp_path):
    (tmp_path / "f.csv").write_text("src,dst,size\nh0,h1,10KB\n")
    r = rdmalab.run(scenario(tmp_path, "  flow_file: f.csv\n  flows: [{src: h2, dst: h3, size: 10KB}]"))
    assert r.summary["flows_total"] == 2


@pytest.mark.parametrize("csv,says", [
    ("src,dst,size\nh0,h1,10KB\nh0,h9,10KB\n", "workload.flow_file[line 3].dst"),
    ("src,dst,size\nh0,h1\n", "workload.flow_file[line 2]: `h0,h1` — has 2 fields; the header has 3"),
    ("src,dst\nh0,h1\n", "needs a `size` column"),
    ("src,dst,size,colour\nh0,h1,1KB,red\nh0,h2,1KB,red\n",
     "1 problem:\n  - workload.flow_file: header `src,dst,size,colour` — column `colour` is no key of a flow; allowed: "
     "src, dst, verb, size, start, dport, tenant, size_bytes, start_ps, start_ns, start_us"),
    ("src,dst,size\nh0,h0,1KB\n", "workload.flow_file[line 2]"),
    ("src,dst,size\nh0,h1,lots\n", "workload.flow_file[line 2].size"),
])
def test_bad_rows_are_refused_by_line(tmp_path, csv, says):
    (tmp_path / "f.csv").write_text(csv)
    with pytest.raises(rdmalab.ScenarioError) as e:
        rdmalab.run(scenario(tmp_path, "  flow_file: f.csv"))
    assert says in str(e.value), str(e.value)


def test_other_files_are_refused_naming_the_key(tmp_path):
    (tmp_path / "f.txt").write_text("src,dst,size\n")
    with pytest.raises(rdmalab.ScenarioError, match=r"workload.flow_file: .* allowed: a .csv or .parquet file"):
        rdmalab.load_scenario(scenario(tmp_path, "  flow_file: f.txt"))
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(rdmalab.ScenarioError, match="cannot be read as Parquet"):
        rdmalab.load_scenario(scenario(tmp_path, "  flow_file: bad.parquet"))
