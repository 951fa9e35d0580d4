"""An ACK's `hops` is the number of switches its data crossed, whoever reads
it: a Python controller, a C controller, or Swift, whose target delay grows
by `per_hop_delay` per switch (Swift §3.3). The way back must not count:
an ACK that also counted its own switches would double Swift's per-hop term.
The Rust side is crates/rdmalab-core/tests/hops.rs."""

import polars as pl
import pytest

import rdmalab

LINK = {"rate": "100Gbps", "delay": "1us"}
# (topology, destination of h0's flow, switches between them)
PATHS = [
    ({"kind": "single_switch", "hosts": 2, "host_link": LINK}, "h1", 1),
    ({"kind": "dumbbell", "left_hosts": 1, "right_hosts": 1, "host_link": LINK, "bottleneck_link": LINK}, "h1", 2),
    # h0 in pod 0, h8 in pod 2: edge, agg, core, agg, edge.
    ({"kind": "fat_tree", "k": 4, "host_link": LINK, "fabric_link": LINK}, "h8", 5),
]
IDS = ["single-switch", "dumbbell", "fat-tree"]


def one_flow(topology, dst, cc, base_dir):
    return rdmalab.scenario_from_dict({
        "name": "hops", "duration": "1ms", "topology": topology, "cc": cc,
        "workload": {"flows": [{"src": "h0", "dst": dst, "size": "64KB"}]},
    }, base_dir=base_dir)


LOG_HOPS_PY = '''
from rdmalab import Controller
class LogHops(Controller):
    subscriptions = ["ACK"]
    def __init__(self, log=""):
        self.log = log
    def on_event(self, ev, ctx):
        with open(self.log, "a") as f:
            f.write(f"{ev.hops} {ctx.path_hops}\\n")
'''


@pytest.mark.parametrize("topology,dst,switches", PATHS, ids=IDS)
def test_a_python_controller_sees_the_switches_the_data_crossed(tmp_path, topology, dst, switches):
    (tmp_path / "loghops.py").write_text(LOG_HOPS_PY)
    log = tmp_path / "hops.log"
    cc = {"algorithm": "python", "class": "loghops.py:LogHops", "params": {"log": str(log)}}
    rdmalab.run(one_flow(topology, dst, cc, tmp_path))
    seen = {tuple(map(int, line.split())) for line in log.read_text().splitlines()}
    assert seen == {(switches, switches)}, "(ev.hops, ctx.path_hops) seen on ACKs"


LOG_HOPS_C = r"""
#include <rdmalab_cc.h>
#include <stdio.h>
void doca_pcc_dev_user_init(uint32_t *disable) { (void)disable; }
void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *c, doca_pcc_dev_event_t *e,
                            const doca_pcc_dev_attr_t *a, doca_pcc_dev_results_t *r) {
    (void)c; (void)a; (void)r;
    if (doca_pcc_dev_get_ev_attr(e).ev_type != DOCA_PCC_DEV_EVNT_ROCE_ACK) return;
    FILE *f = fopen(LOG, "a");
    if (f) { fprintf(f, "%u\n", e->hops); fclose(f); }
}
"""


@pytest.mark.parametrize("topology,dst,switches", PATHS, ids=IDS)
def test_a_c_controller_sees_the_switches_the_data_crossed(tmp_path, topology, dst, switches):
    log = tmp_path / "hops.log"
    src = tmp_path / "loghops.c"
    src.write_text(f'#define LOG "{log}"\n' + LOG_HOPS_C)
    cc = {"algorithm": "c", "source": str(src), "name": "log-hops"}
    rdmalab.run(one_flow(topology, dst, cc, tmp_path))
    seen = {int(line) for line in log.read_text().splitlines()}
    assert seen == {switches}, "e->hops seen on ACKs"


def test_swift_holds_the_queue_at_its_target_for_the_true_hop_count():
    """Two Swift flows into one receiver on a single switch, with a target of
    per_hop_delay × hops and nothing else (no base, no flow scaling): the
    standing queue is the target less the idle round trip. With a doubled
    count it would be twice that."""
    per_hop_us = 10
    link = {"rate": "100Gbps", "delay": "200ns"}
    r = rdmalab.run(rdmalab.scenario_from_dict({
        "name": "swift-target", "duration": "3ms",
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": link},
        "cc": {"algorithm": "swift", "params": {"base_delay": "0us", "per_hop_delay": f"{per_hop_us}us",
                                                "fs_range": "0us"}},
        "workload": {"perftest": [{"src": "h0", "dst": "h2", "message_size": "1MB", "queue_depth": 2},
                                  {"src": "h1", "dst": "h2", "message_size": "1MB", "queue_depth": 2}]},
        "records": {"sample_interval": "10us"},
    }))
    # The idle round trip: four 200 ns links, a 1 KB data packet and its ACK serialised twice each.
    base_rtt_us = 4 * 0.2 + 2 * (1078 + 64) * 8 / 100e3
    want_kb = (1 * per_hop_us - base_rtt_us) * 100e3 / 8 / 1e3
    settled = r.port_samples.filter(pl.col("time_ps") > 1_000_000_000)
    queue_kb = settled.group_by("node", "port").agg(pl.col("queued_bytes").mean())["queued_bytes"].max() / 1e3
    assert queue_kb == pytest.approx(want_kb, rel=0.1)
