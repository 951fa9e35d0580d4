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
    return "8KB marking" if "8KB" in text else "default marking"


#: Snyder et al. §IV-B, Fig. 4 (their text): the staggered attacker alone ~74 Gb/s,
#: beside a victim ~60 Gb/s, both with the switch's default marking.
FIG4_PAPER_ATTACKER_GBPS = {"staggered-alone / default marking": 74.0, "staggered / default marking": 60.0}


@figure("attacks-fig4", "Snyder et al. Fig. 4", "staggered-QP attack: attacker and victim goodput per variant and scope")
def fig4(results):
    t = _tenant_shares(results)
    if t.height == 0 or SCOPE_KEY not in t.columns or "workload" not in t.columns:
        return []
    params = [c for c in (SCOPE_KEY, "workload", MARK_KEY) if c in t.columns]
    p = _pivot(t, params)
    if MARK_KEY in p.columns:
        p = p.with_columns(pl.col(MARK_KEY).map_elements(_marking, return_dtype=pl.String).alias("marking"))
    else:
        p = p.with_columns(pl.lit("default marking").alias("marking"))
    p = p.with_columns((pl.col("workload") + " / " + pl.col("marking")).alias("variant")).sort([SCOPE_KEY, "variant"])
    traces = []
    for i, ((scope,), g) in enumerate(p.group_by([SCOPE_KEY], maintain_order=True)):
        traces.append(Trace(f"{scope}: attacker", g["variant"].to_list(), g["attacker_gbps"].to_list(), _color(i), "bar"))
    shown = set(p["variant"].to_list())
    paper = [(v, y) for v, y in FIG4_PAPER_ATTACKER_GBPS.items() if v in shown]
    if paper:
        traces.append(Trace("paper (ConnectX-5 testbed): attacker", [v for v, _ in paper], [y for _, y in paper],
                            "#000000", "points", over="qp: attacker"))
    fig = Figure("attacks-fig4-goodput", "Staggered-QP attack: attacker goodput per variant and scope (Snyder et al. Fig. 4)",
                 "variant", "attacker Gb/s", traces)
    table = p.select([SCOPE_KEY, "workload", "marking", "attacker_gbps", "victim_gbps", "attacker_share"]).rename(
        {SCOPE_KEY: "cc_scope", "workload": "attack"})
    return [(fig, table)]


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
