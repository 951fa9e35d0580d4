"""Tenants who cheat congestion control (Snyder et al., "RDMA Congestion
Control: It's Only for the Compliant"), and the NIC enforcement scopes
(``nic.cc_scope``) that stop them or not.

Shares and goodputs come from the ``tenants`` table (payload delivered in
order over the whole run). Victims in the fat-tree runs are the flows that
are not attack pieces (``piece`` false); a run whose flows did not all
complete is flagged, as the missing ones would be its slowest.
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import Figure, Trace, _color
from rdmalab.quantiles import nearest_rank_expr

QPS_KEY = "workload.perftest[0].qps"
SCOPE_KEY = "nic.cc_scope"
SPLIT_KEY = "workload.poisson.split"
LOAD_KEY = "workload.poisson.load"
MARK_KEY = "switch.ecn.thresholds"

#: Victim flows "smaller than BDP" in the paper's fat-tree (100 Gb/s x ~13 us RTT ≈ 150 KB).
FAT_TREE_BDP = 150_000


def _tenant_shares(results) -> pl.DataFrame:
    t = results.table("tenants")
    if t.height == 0:
        return t
    return t.with_columns((pl.col("throughput_bps") / 1e9).alias("gbps"))


def _pivot(t: pl.DataFrame, params: list[str]) -> pl.DataFrame:
    """One row per run: attacker and victim goodput and the attacker's share."""
    att = t.filter(pl.col("tenant") == "attacker").select(["run_id"] + params + [
        pl.col("gbps").alias("attacker_gbps"), pl.col("qps").alias("attacker_qps")])
    vic = t.filter(pl.col("tenant") == "victim").select(["run_id", pl.col("gbps").alias("victim_gbps")])
    out = att.join(vic, on="run_id", how="left").with_columns(pl.col("victim_gbps").fill_null(0.0))
    return out.with_columns(
        (pl.col("attacker_gbps") / (pl.col("attacker_gbps") + pl.col("victim_gbps"))).alias("attacker_share"))


@figure("attacks-fig3", "Snyder et al. Fig. 3", "parallel-QP attack: attacker's share of the bottleneck vs its QPs, per enforcement scope")
def fig3(results):
    t = _tenant_shares(results)
    if t.height == 0 or QPS_KEY not in t.columns or SCOPE_KEY not in t.columns:
        return []
    params = [c for c in ("cc", SCOPE_KEY, QPS_KEY) if c in t.columns]
    p = _pivot(t, params).sort(params, maintain_order=True)
    label = [c for c in ("cc", SCOPE_KEY) if c in p.columns]
    traces = []
    for i, (key, g) in enumerate(p.group_by(label, maintain_order=True)):
        name = " / ".join(str(k) for k in key)
        traces.append(Trace(name, g[QPS_KEY].to_list(), g["attacker_share"].to_list(), _color(i), dash=name.startswith("none")))
    fig = Figure("attacks-fig3-share", "Parallel-QP attack: attacker's share vs its QPs (Snyder et al. Fig. 3)",
                 "attacker QPs (victim: 1)", "attacker share of goodput", traces, xlog=True)
    # `cc_scope`, as in the other attack figures' CSVs, so they join on it.
    table = p.select(label + [QPS_KEY, "attacker_gbps", "victim_gbps", "attacker_share"]).rename(
        {QPS_KEY: "attacker_qps", SCOPE_KEY: "cc_scope"})
    return [(fig, table)]


def _marking(v) -> str:
    text = str(v)
    return "8KB marking" if "8KB" in text else "paper's marking"


#: Snyder et al. §IV-A, Fig. 4 (their text): the staggered attacker alone ~74 Gb/s,
#: beside a victim ~60 Gb/s, both with the switch's marking (from 200 KB).
FIG4_PAPER_ATTACKER_GBPS = {"staggered-alone / paper's marking": 74.0, "staggered / paper's marking": 60.0}
#: The victim beside the staggered attacker: "less than 40Gb/s" (an upper bound).
FIG4_PAPER_VICTIM_GBPS = {"staggered / paper's marking": 40.0}


def attack_goodputs(results) -> pl.DataFrame:
    """Per run, goodput while the attack lasts, as the paper measures its
    1.125 MB transfer: the attacker's bytes over the time from its first
    flow's post to its last flow's delivery, and the victim's payload
    delivered in the same window (from `qp_samples`: each sample's
    throughput covers the sample interval before it, so the window is
    exact to one interval at each end). `attack_completed` is false when
    some attacker flow had not finished by the end of the run; the window
    then ends at the run's end and counts only the flows that finished."""
    flows = results.table("flows")
    att = flows.filter(pl.col("tenant") == "attacker").group_by("run_id").agg(
        pl.col("start_ps").min().alias("t0"), pl.col("finish_ps").max().alias("t1"),
        pl.col("size_bytes").sum().alias("attacker_bytes"))
    tenants = results.table("tenants").filter(pl.col("tenant") == "attacker").select(
        "run_id", (pl.col("flows_completed") == pl.col("flows")).alias("attack_completed"))
    ends = results.summaries().select("run_id", pl.col("sim_time_ps").alias("end"))
    att = att.join(tenants, on="run_id").join(ends, on="run_id").with_columns(
        pl.when(pl.col("attack_completed")).then(pl.col("t1")).otherwise(pl.col("end")).alias("t1"))
    victim_qps = pl.concat([
        results.table("apps").filter(pl.col("tenant") == "victim").select("run_id", pl.col("qp").cast(pl.Int64)),
        flows.filter(pl.col("tenant") == "victim").select("run_id", pl.col("qp").cast(pl.Int64)),
    ]).unique()
    samples = results.table("qp_samples").select("run_id", "time_ps", pl.col("qp").cast(pl.Int64), "throughput_bps")
    period = samples.select("run_id", "time_ps").unique().sort("run_id", "time_ps").group_by("run_id").agg(
        pl.col("time_ps").diff().min().alias("period"))
    vic = samples.join(victim_qps, on=["run_id", "qp"]).join(att.select("run_id", "t0", "t1"), on="run_id").filter(
        (pl.col("time_ps") > pl.col("t0")) & (pl.col("time_ps") <= pl.col("t1"))).group_by("run_id").agg(
        pl.col("throughput_bps").cast(pl.Float64).sum().alias("victim_bps_sum"))
    out = att.join(period, on="run_id", how="left").join(vic, on="run_id", how="left").with_columns(
        ((pl.col("t1") - pl.col("t0")) / 1e6).alias("window_us"),
        (pl.col("attacker_bytes") * 8 / ((pl.col("t1") - pl.col("t0")) / 1e12) / 1e9).alias("attacker_gbps"),
        (pl.col("victim_bps_sum").fill_null(0.0) * pl.col("period") / (pl.col("t1") - pl.col("t0")) / 1e9)
        .alias("victim_gbps"))
    return out.with_columns(
        (pl.col("attacker_gbps") / (pl.col("attacker_gbps") + pl.col("victim_gbps"))).alias("attacker_share"))


@figure("attacks-fig4", "Snyder et al. Fig. 4", "staggered-QP attack: attacker and victim goodput during the attack, per variant and scope")
def fig4(results):
    if "workload" not in results.param_names or SCOPE_KEY not in results.param_names:
        return []
    g = attack_goodputs(results)
    if g.height == 0:
        return []
    params = results.manifest().select("run_id", *[results.column(k) for k in (SCOPE_KEY, "workload", MARK_KEY)
                                                    if k in results.param_names])
    p = g.join(params, on="run_id")
    if MARK_KEY in p.columns:
        p = p.with_columns(pl.col(MARK_KEY).map_elements(_marking, return_dtype=pl.String).alias("marking"))
    else:
        p = p.with_columns(pl.lit("paper's marking").alias("marking"))
    p = p.with_columns((pl.col("workload") + " / " + pl.col("marking")).alias("variant")).sort([SCOPE_KEY, "variant"])
    shown = set(p["variant"].to_list())
    figs = []
    for who, paper_values, note in (("attacker", FIG4_PAPER_ATTACKER_GBPS, ""),
                                    ("victim", FIG4_PAPER_VICTIM_GBPS, " (at most)")):
        traces = [Trace(f"{scope}: {who}", g_["variant"].to_list(), g_[f"{who}_gbps"].to_list(), _color(i), "bar")
                  for i, ((scope,), g_) in enumerate(p.group_by([SCOPE_KEY], maintain_order=True))]
        paper = [(v, y) for v, y in paper_values.items() if v in shown]
        if paper:
            traces.append(Trace(f"paper (ConnectX-5 testbed): {who}{note}", [v for v, _ in paper],
                                [y for _, y in paper], "#000000", "points", over=f"qp: {who}"))
        key = "attacks-fig4-goodput" if who == "attacker" else "attacks-fig4-victim"
        figs.append(Figure(key, f"Staggered-QP attack: {who} goodput during the attack (Snyder et al. Fig. 4)",
                           "variant", f"{who} Gb/s", traces))
    table = p.select([SCOPE_KEY, "workload", "marking", "window_us", "attack_completed", "attacker_gbps",
                      "victim_gbps", "attacker_share"]).rename({SCOPE_KEY: "cc_scope", "workload": "attack"})
    return [(figs[0], table), (figs[1], None)]


def victim_slowdowns(results, below: int = FAT_TREE_BDP) -> pl.DataFrame:
    """Per run: p50, p99, p99.9 slowdown of victim flows (not pieces) under `below` bytes
    (nearest rank, as every output: docs/outputs.md "Quantiles")."""
    f = results.table("flows")
    if f.height == 0:
        return f
    params = [c for c in (SCOPE_KEY, LOAD_KEY, SPLIT_KEY) if c in f.columns]
    s = results.summaries().select(["run_id", "flows_total", "flows_completed"])
    v = f.filter(~pl.col("piece") & (pl.col("size_bytes") < below))
    agg = v.group_by(["run_id"] + params, maintain_order=True).agg(
        pl.len().alias("victim_flows"),
        nearest_rank_expr("slowdown", 0.5).alias("p50"),
        nearest_rank_expr("slowdown", 0.99).alias("p99"),
        nearest_rank_expr("slowdown", 0.999).alias("p99_9"),
    )
    pieces = f.group_by("run_id").agg(pl.col("piece").sum().alias("pieces"))
    return agg.join(pieces, on="run_id", how="left").join(s, on="run_id", how="left").with_columns(
        (pl.col("flows_completed") == pl.col("flows_total")).alias("all_completed"))


@figure("attacks-fig5", "Snyder et al. Fig. 5", "fat-tree with Hadoop traffic: victim p99 slowdown of flows under a BDP, per attack and scope")
def fig5(results):
    t = victim_slowdowns(results)
    if t.height == 0 or SPLIT_KEY not in t.columns:
        return []
    order = {"none": 0, "parallel": 1, "staggered": 2}
    keys = [c for c in (SCOPE_KEY, LOAD_KEY) if c in t.columns]
    t = t.with_columns(pl.col(SPLIT_KEY).replace_strict(order, default=9).alias("_o")).sort(keys + ["_o"]).drop("_o")
    groups = t.group_by(keys, maintain_order=True) if keys else [(("qp",), t)]
    traces = [Trace(", ".join(f"{k.split('.')[-1]} {v}" for k, v in zip(keys, key)), g[SPLIT_KEY].to_list(),
                    g["p99"].to_list(), _color(i), "bar")
              for i, (key, g) in enumerate(groups)]
    fig = Figure("attacks-fig5-victims", "Victim flows under a BDP: p99 FCT slowdown (Snyder et al. Fig. 5)",
                 "attack", "p99 slowdown", traces)
    table = t.drop("run_id").rename({SPLIT_KEY: "attack", SCOPE_KEY: "cc_scope", LOAD_KEY: "load"}, strict=False)
    return [(fig, table)]


@figure("attacks-fig6", "Snyder et al. Fig. 6", "HPCC without attack: p99 and p99.9 slowdown vs flow size, per QP vs per host pair")
def fig6(results):
    from rdmalab.analysis import slowdown_by_size

    f = results.table("flows")
    if f.height == 0 or SCOPE_KEY not in f.columns:
        return []
    b = slowdown_by_size(f.filter(~pl.col("piece")), by=[SCOPE_KEY], buckets=20, quantiles=(0.5, 0.99, 0.999))
    # The paper's headline: flows of 20-110 KB (under its BDP).
    mid = f.filter(~pl.col("piece") & pl.col("size_bytes").is_between(20_000, 110_000))
    band = mid.group_by([SCOPE_KEY], maintain_order=True).agg(
        pl.len().alias("flows_20_110KB"),
        nearest_rank_expr("slowdown", 0.99).alias("p99"),
        nearest_rank_expr("slowdown", 0.999).alias("p99_9")).rename({SCOPE_KEY: "cc_scope"})
    out = []
    for q, table in (("p99", b.rename({SCOPE_KEY: "cc_scope"})), ("p99_9", band)):
        traces = [Trace(f"per {scope}", g["size_max_bytes"].to_list(), g[q].to_list(), _color(i))
                  for i, ((scope,), g) in enumerate(b.group_by([SCOPE_KEY], maintain_order=True))]
        out.append((Figure(f"attacks-fig6-{q}", f"HPCC, Hadoop, no attack: {q.replace('_', '.')} slowdown by size (Snyder et al. Fig. 6)",
                           "flow size (B, bucket's largest)", f"{q.replace('_', '.')} slowdown", traces, xlog=True), table))
    return out
