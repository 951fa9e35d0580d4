"""SCR §6.1 in kind: how the control framework keeps up as QPs grow.

One sender host runs N perftest WRITE QPs (64 KB messages) to one receiver
through a 100 Gb/s switch; their controller (DCQCN with its byte counter on)
subscribes to every TX event, so the NIC raises one event per packet. The
control loop runs on the DPA placement with a fixed pool of threads. For N
from 1 to 1024 the table shows the event rate the NIC raises, the rate at
which threads process entries, the coalescing granularity (TX bytes per
processed TX entry) and the busiest thread's load. A second table compares
hardware-only coalescing with hardware + software coalescing at 4 threads:
"events covered" counts the TX events whose information reached a
controller (processed entries and the events folded into them).

Run: python experiments/scr_framework_measurements.py [--threads 64] [--duration 2ms]
"""

from __future__ import annotations

import argparse

import rdmalab
from rdmalab import _core


def scenario(n_qps: int, threads: int, duration: str, software: bool) -> rdmalab.scenario.LoadedScenario:
    return rdmalab.scenario_from_dict({
        "name": f"scr-framework-{n_qps}qps",
        "duration": duration,
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "cc": {"algorithm": "dcqcn", "params": {"byte_counter": "64KB"}},
        "control": {"placement": "dpa", "threads": threads, "software_coalescing": software, "record_delays": False},
        "records": {"sample_interval": "off"},
        "workload": {"perftest": [{"src": "h0", "dst": "h1", "message_size": "64KB", "queue_depth": 1, "qps": n_qps}]},
    })


def measure(n_qps: int, threads: int, duration: str, software: bool = True) -> dict:
    sim = _core.Simulation(scenario(n_qps, threads, duration, software).to_json())
    sim.run_until(sim.stop_ps)
    s = sim.summary()
    secs = s["sim_time_ps"] / 1e12
    tx_entries = s["control_entries_processed"]
    return {
        "qps": n_qps,
        "event_rate": s["control_events_raised"] / secs,
        "processing_rate": tx_entries / secs,
        "granularity": s["control_tx_bytes_processed"] / max(1, tx_entries),
        # Events whose information reached a controller: processed entries plus what they had absorbed.
        "covered_rate": (tx_entries + s["control_hw_coalesced"] + s["control_sw_coalesced"]) / secs,
        "busy": s["control_thread_busy_max"],
        "goodput": s["message_bytes_delivered"] * 8 / secs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=64, help="DPA threads in the pool (default 64)")
    ap.add_argument("--duration", default="2ms", help="simulated time per point")
    args = ap.parse_args()

    print(f"DPA placement, {args.threads} threads, 7 us trigger, 4 us per entry, 6 us install")
    print(f"{'QPs':>5} {'events raised/s':>16} {'entries run/s':>14} {'bytes/entry':>12} {'busiest thread':>15} {'goodput Gb/s':>13}")
    for n in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]:
        r = measure(n, args.threads, args.duration)
        print(f"{n:>5} {r['event_rate']:>16.3e} {r['processing_rate']:>14.3e} {r['granularity']:>12.0f} "
              f"{r['busy']:>15.2f} {r['goodput'] / 1e9:>13.1f}")

    print("\nCoalescing at 4 threads (hardware only vs hardware + software)")
    print(f"{'QPs':>5} {'entries run/s':>14} {'events covered/s HW':>20} {'HW+SW':>10} "
          f"{'bytes/entry HW':>15} {'HW+SW':>8}")
    for n in [4, 16, 64, 256]:
        hw = measure(n, 4, args.duration, software=False)
        sw = measure(n, 4, args.duration, software=True)
        print(f"{n:>5} {sw['processing_rate']:>14.3e} {hw['covered_rate']:>20.3e} {sw['covered_rate']:>10.3e} "
              f"{hw['granularity']:>15.0f} {sw['granularity']:>8.0f}")


if __name__ == "__main__":
    main()
