"""SCR appendix A.2 and A.3 (Fig. 14, 15) from the shipped sweeps: the
dequeue rate sets what a QP puts into the fabric, delivers to its peer and
reads over the host's PCIe; and TX events coalesce more with bigger
messages, deeper send queues and slower processing, up to a ceiling."""

from pathlib import Path

import polars as pl
from conftest import run_sweep

# The DPA placement's trigger latency (docs/control-framework.md) and the
# payload rate of one QP at 100 Gb/s with 1000 B packets.
TRIGGER_US = 7.0
PAYLOAD_GBPS = 92.4


def sweep(examples: Path, name: str, out: Path) -> Path:
    return run_sweep(examples / "scr" / name, out)


def test_fig14_the_dequeue_rate_sets_fabric_peer_pcie_and_dma_in_proportion(examples, tmp_path):
    t = pl.read_csv(sweep(examples, "scr-fig14-dequeue-rate.yaml", tmp_path) / "scr-fig14.csv")
    assert t["dequeue_gbps"].to_list() == [10, 20, 40, 60, 80, 100]
    for col, lo, hi in (("fabric_gbps", 0.90, 0.95), ("peer_gbps", 0.90, 0.95),
                        # payload and WQEs read over PCIe with their TLP headers: a little more than the dequeue rate
                        ("pcie_read_gbps", 1.0, 1.05)):
        ratio = (t[col] / t["dequeue_gbps"]).to_list()
        assert all(lo <= r <= hi for r in ratio), (col, ratio)
    per_gbps = (t["dma_reads_per_us"] / t["dequeue_gbps"]).to_list()
    assert max(per_gbps) / min(per_gbps) < 1.02, per_gbps


def test_fig15a_tx_events_coalesce_more_with_size_and_depth_up_to_the_trigger_window(examples, tmp_path):
    t = pl.read_csv(sweep(examples, "scr-fig15a-coalescing.yaml", tmp_path) / "scr-fig15a.csv")
    qd, size = "workload.perftest[0].queue_depth", "workload.perftest[0].message_size"
    grid = {(r[qd], r[size]): r["bytes_per_event"] for r in t.iter_rows(named=True)}
    sizes = ["4KiB", "16KiB", "64KiB", "256KiB", "1MiB"]
    for d in (1, 4, 16):
        row = [grid[(d, s)] for s in sizes]
        assert row == sorted(row), (d, row)
    for s in sizes:
        col = [grid[(d, s)] for d in (1, 4, 16)]
        assert col == sorted(col), (s, col)
    # A waiting entry folds in what is sent during the trigger latency; no more.
    window = TRIGGER_US * 1e-6 * PAYLOAD_GBPS * 1e9 / 8
    assert max(grid.values()) <= 1.05 * window, (max(grid.values()), window)
    assert grid[(16, "1MiB")] >= 0.95 * window
    assert grid[(1, "4KiB")] < 0.15 * window, "a lone small message is its own event"


def test_fig15b_slower_processing_coalesces_more(examples, tmp_path):
    t = pl.read_csv(sweep(examples, "scr-fig15b-coalescing.yaml", tmp_path) / "scr-fig15b.csv")
    b = t["bytes_per_event"].to_list()
    assert b == sorted(b), b
    # Below the trigger period processing hides behind it; above, events pile up while the thread works.
    fast, slow = b[0], b[-1]
    assert slow > 2 * fast, b
