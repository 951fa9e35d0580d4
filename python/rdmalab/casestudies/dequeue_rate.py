"""SCR A.2, Fig. 14: one QP's dequeue rate, swept, and what it sets in each
domain: bytes into the fabric, bytes delivered at the peer, the host PCIe's
inbound DMA read bandwidth (payload and WQEs, TLP overheads included) and
the DMA reads the NIC issues. The paper measured the last two with Intel PCM
on the host's IIO; here they come from the NIC model's PCIe counters
(``nic_resources``)."""

from __future__ import annotations

import polars as pl

from rdmalab.casestudies import figure
from rdmalab.plots import Figure, Trace, _color

RATE_KEY = "workload.perftest[0].rate"


def _gbps(text) -> float:
    s = str(text)
    for unit, scale in (("Tbps", 1e3), ("Gbps", 1.0), ("Mbps", 1e-3), ("Kbps", 1e-6), ("bps", 1e-9)):
        if s.endswith(unit):
            return float(s[: -len(unit)]) * scale
    return float(s) / 1e9


def domains(results) -> pl.DataFrame:
    """Per run: the dequeue rate and the fabric, peer, PCIe and DMA figures it led to."""
    s = results.summaries()
    if s.height == 0 or RATE_KEY not in s.columns:
        return pl.DataFrame()
    r = results.table("nic_resources")
    sender = (r.with_columns((pl.col("pcie_payload_bytes") + pl.col("pcie_wqe_bytes") + pl.col("pcie_qpc_bytes")
                              + pl.col("pcie_mtt_bytes")).alias("pcie_bytes"),
                             (pl.col("pcie_payload_requests") + pl.col("pcie_wqe_requests")
                              + pl.col("pcie_qpc_requests") + pl.col("pcie_mtt_requests")).alias("dma_reads"))
              .sort("pcie_bytes", descending=True).group_by("run_id", maintain_order=True).first()
              .select("run_id", "pcie_bytes", "dma_reads"))
    t = s.join(sender, on="run_id").with_columns(pl.col("sim_time_ps").cast(pl.Float64).alias("ps"))
    return t.select(
        pl.col(RATE_KEY).map_elements(_gbps, return_dtype=pl.Float64).alias("dequeue_gbps"),
        (pl.col("data_payload_sent_bytes") * 8 / pl.col("ps") * 1e3).alias("fabric_gbps"),
        (pl.col("message_bytes_delivered") * 8 / pl.col("ps") * 1e3).alias("peer_gbps"),
        (pl.col("pcie_bytes") * 8 / pl.col("ps") * 1e3).alias("pcie_read_gbps"),
        (pl.col("dma_reads") / pl.col("ps") * 1e6).alias("dma_reads_per_us"),
    ).sort("dequeue_gbps")


@figure("scr-fig14", "SCR Fig. 14", "one QP's dequeue rate vs fabric, peer, PCIe read bandwidth and DMA reads")
def fig14(results):
    t = domains(results)
    if t.height == 0:
        return []
    x = t["dequeue_gbps"].to_list()
    rates = [Trace(label, x, t[col].to_list(), _color(i), "line")
             for i, (label, col) in enumerate((("fabric (sent)", "fabric_gbps"), ("peer (delivered)", "peer_gbps"),
                                               ("host PCIe (DMA reads)", "pcie_read_gbps")))]
    a = Figure("scr-fig14", "What one QP's dequeue rate sets (SCR Fig. 14a/b)", "dequeue rate (Gb/s)", "Gb/s", rates)
    c = Figure("scr-fig14-dma", "DMA reads the NIC issues (SCR Fig. 14c)", "dequeue rate (Gb/s)",
               "DMA reads per µs", [Trace("DMA reads", x, t["dma_reads_per_us"].to_list(), _color(3), "line")])
    return [(a, t), (c, t.select("dequeue_gbps", "dma_reads_per_us"))]
