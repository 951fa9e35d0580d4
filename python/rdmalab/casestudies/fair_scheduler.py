"""SCR §5.1 and §6.2: the default RNIC QP scheduler against fair policies.

Throughput of a tenant is the payload its QP delivered per second over the
second half of the run (``qp_samples``), so the filling at the start does not
count; Jain's index and total bandwidth follow SCR Fig. 11's metrics.
"""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure, size_bytes
from rdmalab.plots import Figure, Trace, _color

SIZE_KEYS = ("workload.perftest[0].message_size", "workload.perftest[1].message_size")


def tenant_rates(results) -> pl.DataFrame:
    """Per run and app: mean delivered payload rate (Gb/s) over the second half
    of the run, and the app's mean message latency (µs)."""
    samples = results.table("qp_samples")
    apps = results.table("apps")
    if samples.height == 0 or apps.height == 0:
        return pl.DataFrame()
    end = samples.group_by("run_id").agg(pl.col("time_ps").max().alias("end_ps"))
    tput = (
        samples.join(end, on="run_id")
        .filter(pl.col("time_ps") > pl.col("end_ps") // 2)
        .group_by(["run_id", "qp"])
        .agg((pl.col("throughput_bps").mean() / 1e9).alias("gbps"))
    )
    keep = [c for c in apps.columns if c not in ("qp",)]
    return (
        apps.select(keep + ["qp"])
        .join(tput, on=["run_id", "qp"], how="left", maintain_order="left")
        .with_columns(pl.col("gbps").fill_null(0.0), (pl.col("latency_mean_ps") / 1e6).alias("latency_us"))
    )


def _jain(xs: list[float]) -> float:
    s, s2 = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * s2) if s2 > 0 else 1.0


@figure("scr-fig11", "SCR Fig. 11", "two tenants, message sizes on both axes: Jain's index and total bandwidth per policy")
def fig11(results):
    t = tenant_rates(results)
    if t.height == 0 or not all(k in t.columns for k in SIZE_KEYS) or "cc" not in t.columns:
        return []
    rows = []
    for (run_id,), g in t.group_by(["run_id"], maintain_order=True):
        r = g.row(0, named=True)
        rates = g["gbps"].to_list()
        rows.append({"policy": r["cc"], "size_a": r[SIZE_KEYS[0]], "size_b": r[SIZE_KEYS[1]],
                     "gbps_a": rates[0], "gbps_b": rates[1] if len(rates) > 1 else 0.0,
                     "jain": _jain(rates), "total_gbps": sum(rates)})
    table = pl.DataFrame(rows)
    sizes_a = sorted(set(table["size_a"]), key=size_bytes)
    sizes_b = sorted(set(table["size_b"]), key=size_bytes)
    out = []
    for policy in list(dict.fromkeys(table["policy"].to_list())):
        p = table.filter(pl.col("policy") == policy)
        cell = {(r["size_a"], r["size_b"]): r for r in p.iter_rows(named=True)}
        for metric, label, zmin, zmax in (("jain", "Jain's index", 0.5, 1.0), ("total_gbps", "total Gb/s", 0.0, 100.0)):
            z = [[cell[(a, b)][metric] if (a, b) in cell else None for b in sizes_b] for a in sizes_a]
            key = f"scr-fig11-{'jain' if metric == 'jain' else 'bandwidth'}-{policy}"
            fig = Figure(key, f"{label}: {policy} (SCR Fig. 11)", "tenant B message size", "tenant A message size",
                         heatmap={"x": sizes_b, "y": sizes_a, "z": z, "zmin": zmin, "zmax": zmax, "label": label})
            out.append((fig, p if metric == "jain" else None))
    return out


@figure("scr-fig13", "SCR Fig. 13", "latency tenant's latency and bandwidth tenant's bandwidth per policy")
def fig13(results):
    t = tenant_rates(results)
    if t.height == 0 or "cc" not in t.columns:
        return []
    lat = t.filter(pl.col("name") == "latency")
    bw = t.filter(pl.col("name") == "bandwidth")
    table = lat.select("cc", pl.col("latency_us").alias("latency_tenant_us"), pl.col("gbps").alias("latency_tenant_gbps")).join(
        bw.select("cc", pl.col("gbps").alias("bandwidth_tenant_gbps"), pl.col("latency_us").alias("bandwidth_tenant_us")),
        on="cc", how="left", maintain_order="left")
    policies = table["cc"].to_list()
    a = Figure("scr-fig13a-latency", "Latency-sensitive tenant (256 B, batch 4): mean latency (SCR Fig. 13a)",
               "policy", "latency (us)", [Trace("latency tenant", policies, table["latency_tenant_us"].to_list(), _color(0), "bar")])
    b = Figure("scr-fig13b-bandwidth", "Bandwidth-hungry tenant (64 KiB, batch 128): bandwidth (SCR Fig. 13b)",
               "policy", "Gb/s", [Trace("bandwidth tenant", policies, table["bandwidth_tenant_gbps"].to_list(), _color(1), "bar")])
    return [(a, table), (b, None)]


@figure("scr-table2", "SCR Table 2", "the default scheduler: a 4 KiB and a 256 B tenant alone and beside a 64 KiB one")
def table2(results):
    t = tenant_rates(results)
    key = "workload.perftest"
    if t.height == 0 or key not in t.columns:
        return []
    table = t.select(pl.col(key).alias("case"), pl.col("name").alias("tenant"), "gbps", "latency_us")
    cases = table["case"].unique(maintain_order=True).to_list()
    traces = [Trace(name, [c for c in cases if c in set(g["case"].to_list())], g["gbps"].to_list(), _color(i), "bar")
              for i, ((name,), g) in enumerate(table.group_by(["tenant"], maintain_order=True))]
    fig = Figure("scr-table2", "Default WQE scheduler: each tenant's bandwidth (SCR Table 2)", "case", "Gb/s", traces)
    return [(fig, table)]


def _rate_traces(results) -> pl.DataFrame:
    s = results.table("qp_samples")
    apps = results.table("apps").select("run_id", "qp", "name")
    return s.join(apps, on=["run_id", "qp"], maintain_order="left").with_columns(
        (pl.col("time_ps") / 1e6).alias("time_us"), (pl.col("dequeue_rate_bps") / 1e9).alias("dequeue_gbps"))


@figure("scr-fig9", "SCR Fig. 9 / 16", "water filling: each QP's dequeue rate over time as QPs join one by one")
def fig9(results):
    t = _rate_traces(results)
    if t.height == 0:
        return []
    out = []
    group = "cc" if "cc" in t.columns else None
    for label, g in (t.group_by([group], maintain_order=True) if group else [((results.name,), t)]):
        label = label[0]
        traces = [Trace(name, q["time_us"].to_list(), q["dequeue_gbps"].to_list(), _color(i), "step")
                  for i, ((name,), q) in enumerate(g.sort("time_ps").group_by(["name"], maintain_order=True))]
        fig = Figure(f"scr-fig9-{label}", f"Water filling, join strategy `{label}`: dequeue rate per QP (SCR Fig. 9/16)",
                     "time (us)", "dequeue rate (Gb/s)", traces)
        out.append((fig, g.select("time_us", "name", "dequeue_gbps", (pl.col("throughput_bps") / 1e9).alias("throughput_gbps"))))
    return out


def convergence_us(trace: pl.DataFrame, tolerance: float = 0.05, by: str = "qp") -> float | None:
    """Time (µs) after which every QP's dequeue rate stays within `tolerance`
    (relative) of its final value; None if some QP never settles. `by`: the
    column that tells QPs apart (`name` in a figure's CSV)."""
    last = 0.0
    for (_,), q in trace.sort("time_us").group_by([by], maintain_order=True):
        rates = q["dequeue_gbps"].to_list()
        times = q["time_us"].to_list()
        final = rates[-1]
        settled = None
        for t, r in zip(reversed(times), reversed(rates)):
            if abs(r - final) > tolerance * max(final, 1e-9):
                break
            settled = t
        if settled is None or settled == times[-1]:
            return None
        last = max(last, settled)
    return last


@figure("scr-table5", "SCR Table 5", "water filling: time for all QPs to settle, per step size")
def table5(results):
    t = _rate_traces(results)
    if t.height == 0 or "cc" not in t.columns:
        return []
    rows = [{"step": label, "convergence_us": convergence_us(g)} for (label,), g in t.group_by(["cc"], maintain_order=True)]
    table = pl.DataFrame(rows, schema={"step": pl.String, "convergence_us": pl.Float64})
    fig = Figure("scr-table5-convergence", "Time for 8 QPs to settle from 0.5 Gb/s (SCR Table 5)", "filling step",
                 "convergence time (us)", [Trace("convergence", table["step"].to_list(),
                                                 [v if v is not None else float("nan") for v in table["convergence_us"].to_list()],
                                                 _color(0), "bar")])
    return [(fig, table)]


QPS_KEY = "workload.perftest[0].qps"
VERB_KEY = "workload.perftest[0].verb"


@figure("scr-fig12", "SCR Fig. 12 / 17", "N QPs with random message sizes: Jain's index and total bandwidth vs N per policy (WRITE, READ)")
def fig12(results):
    t = tenant_rates(results)
    if t.height == 0 or QPS_KEY not in t.columns or "cc" not in t.columns:
        return []
    verb = VERB_KEY if VERB_KEY in t.columns else None
    keys = ([verb] if verb else []) + ["cc", QPS_KEY]
    rows = []
    for k, g in t.group_by(keys, maintain_order=True):
        rates = g["gbps"].to_list()
        row = dict(zip(keys, k))
        rows.append({"verb": row.get(verb, "write") if verb else "write", "policy": row["cc"], "qps": int(row[QPS_KEY]),
                     "jain": _jain(rates), "total_gbps": sum(rates), "min_gbps": min(rates), "max_gbps": max(rates)})
    table = pl.DataFrame(rows)
    out = []
    for (v,), tv in table.group_by(["verb"], maintain_order=True):
        for metric, ylabel, name in (("jain", "Jain's index", "fairness"), ("total_gbps", "total Gb/s", "bandwidth")):
            traces = [Trace(pol, g["qps"].to_list(), g[metric].to_list(), _color(i))
                      for i, ((pol,), g) in enumerate(tv.sort("qps").group_by(["policy"], maintain_order=True))]
            fig = Figure(f"scr-fig12-{v}-{name}", f"{ylabel} of N QPs, sizes uniform in [4 KiB, 1 MiB], {v.upper()} "
                         f"(SCR Fig. {'12' if v == 'write' else '17'})", "QPs", ylabel, traces, xlog=True)
            out.append((fig, tv if metric == "jain" else None))
    return out


@figure("scr-fig21", "SCR Fig. 21", "GPU-Direct / NVMe-oF tenants: bandwidth per tenant under each policy")
def fig21(results):
    t = tenant_rates(results)
    if t.height == 0:
        return []
    group = "cc" if "cc" in t.columns else None
    traces, rows = [], []
    for i, (label, g) in enumerate(t.group_by([group], maintain_order=True) if group else [((results.name,), t)]):
        traces.append(Trace(label[0], g["name"].to_list(), g["gbps"].to_list(), _color(i), "bar"))
        rows.append({"policy": label[0], "jain": _jain(g["gbps"].to_list()), "total_gbps": sum(g["gbps"].to_list())})
    table = t.select(([group] if group else []) + ["name", "message_bytes", "queue_depth", "gbps"])
    name = results.name.removeprefix("scr-")
    fig = Figure(f"scr-fig21-{name}", f"Bandwidth per tenant: {results.name} (SCR Fig. 21)", "tenant", "Gb/s", traces)
    summary = Figure(f"scr-fig21-{name}-jain", f"Jain's index per policy: {results.name}", "policy", "Jain's index",
                     [Trace("Jain", [r["policy"] for r in rows], [r["jain"] for r in rows], _color(0), "bar")])
    return [(fig, table), (summary, pl.DataFrame(rows))]
