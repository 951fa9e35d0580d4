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


def test_a_flow_file_and_a_list_add_up(tmp_path):
    (tmp_path / "f.csv").write_text("src,dst,size\nh0,h1,10KB\n")
    r = rdmalab.run(scenario(tmp_path, "  flow_file: f.csv\n  flows: [{src: h2, dst: h3, size: 10KB}]"))
    assert r.summary["flows_total"] == 2


@pytest.mark.parametrize("csv,says", [
    ("src,dst,size\nh0,h1,10KB\nh0,h9,10KB\n", "workload.flow_file[line 3].dst"),
    ("src,dst,size\nh0,h1\n", "workload.flow_file[line 2]: `h0,h1` — has 2 fields; the header has 3"),
    ("src,dst\nh0,h1\n", "needs a `size` column"),
    ("src,dst,size,colour\nh0,h1,1KB,red\n", "workload.flow_file[line 2].colour"),
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
