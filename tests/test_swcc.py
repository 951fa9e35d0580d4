"""SwCC's QP-context memory figure: a small version of the shipped Fig. 11
sweep draws both panels, and the numbers show the hint keeping access flat."""

import polars as pl
import yaml
from conftest import run_sweep


def test_fig11_small(examples, tmp_path):
    spec = yaml.safe_load((examples / "swcc" / "swcc-fig11-memory.yaml").read_text())
    spec["base"]["duration"] = "1ms"
    spec["grid"]["workload.perftest[0].qps"] = [512, 4096]
    spec["grid"]["control.on_path.memory"] = {"naive": "naive", "qp-aware+hint": "qp-aware"}
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(spec))
    plots = run_sweep(f, tmp_path / "out")
    assert (plots / "swcc-fig11-throughput.png").stat().st_size > 0
    t = pl.read_csv(plots / "swcc-fig11-access.csv")
    ns = {(r["memory"], r["qps"]): r["cc_core_context_access_ns"] for r in t.iter_rows(named=True)}
    assert ns["qp-aware+hint", 512] <= 0.5 * ns["naive", 512]
    assert ns["qp-aware+hint", 4096] <= 1.1 * ns["qp-aware+hint", 512]
    assert ns["naive", 4096] > 1.5 * ns["naive", 512]


def test_fig1_a_slower_loop_drains_the_queue_later(examples, tmp_path):
    t = pl.read_csv(run_sweep(examples / "swcc" / "swcc-fig1-drain.yaml", tmp_path / "o") / "swcc-fig1-drain.csv")
    d = {row["control"]: row["drain_us"] for row in t.iter_rows(named=True)}
    assert d["asic"] <= d["delay-2us"] <= d["delay-5us"] <= d["delay-10us"] <= d["host-cpu"]
    assert d["host-cpu"] > 2 * d["asic"]
