"""`rdmalab hpcc`: ns-3 HPCC simulator input directories in, its output formats out."""

import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdmalab
from rdmalab.hpcc import convert, fct_slowdown, generate_flows, load_cdf, read_fct
from rdmalab.hpcc.fct import node_to_ip
from rdmalab.hpcc.traffic import cdf_mean, parse_cdf
from rdmalab.hpcc.units import parse_rate_bps, seconds_to_ns

# The repo's mix/config.txt, with a short stop time and MULTI_RATE 0 (rdmalab's HPCC is single-rate).
CONFIG = """\
ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1

PACKET_PAYLOAD_SIZE 1000

TOPOLOGY_FILE mix/topology.txt
FLOW_FILE mix/flow.txt
TRACE_FILE mix/trace.txt
TRACE_OUTPUT_FILE mix/mix.tr
FCT_OUTPUT_FILE mix/fct.txt
PFC_OUTPUT_FILE mix/pfc.txt

SIMULATOR_STOP_TIME 2.01

CC_MODE 3
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
MIN_RATE 100Mb/s
DCTCP_RATE_AI 1000Mb/s

ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0

HAS_WIN 1
GLOBAL_T 1
VAR_WIN 1
FAST_REACT 1
U_TARGET 0.95
MI_THRESH 0
INT_MULTI 1
MULTI_RATE 0
SAMPLE_FEEDBACK 0

RATE_BOUND 1

ACK_HIGH_PRIO 0

LINK_DOWN 0 0 0

ENABLE_TRACE 1

KMAX_MAP 3 25000000000 400 50000000000 800 100000000000 1600
KMIN_MAP 3 25000000000 100 50000000000 200 100000000000 400
PMAX_MAP 3 25000000000 0.2 50000000000 0.2 100000000000 0.2
BUFFER_SIZE 32
QLEN_MON_FILE mix/qlen.txt
QLEN_MON_START 2000000000
QLEN_MON_END 2000200000
"""

# 1 switch (node 8) and 8 hosts at 100 Gb/s, 1 µs, with ns-3's trailing prose.
TOPOLOGY = "9 1 8\n8\n" + "".join(f"{i} 8 100Gbps 0.001ms 0.000000\n" for i in range(8)) + \
    "\nFirst line: total node #, switch node #, link #\n"

# A 7-to-1 incast of 200 KB (dport 100) and a 1 KB flow the other way (dport 200).
FLOWS = "8\n" + "".join(f"{i} 7 3 100 200000 2.00000{i}612\n" for i in range(3)) + \
    "7 0 3 200 1000 2.000002612\n" + "".join(f"{i} 7 3 100 200000 2.00000{i}612\n" for i in range(3, 7))


def make_dir(tmp_path: Path, config: str = CONFIG, topology: str = TOPOLOGY, flows: str = FLOWS) -> Path:
    mix = tmp_path / "mix"
    mix.mkdir(exist_ok=True)
    (mix / "config.txt").write_text(config)
    (mix / "topology.txt").write_text(topology)
    (mix / "flow.txt").write_text(flows)
    return mix / "config.txt"


def cli(*args, cwd=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "rdmalab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def edit(config: str, key: str, value: str | None) -> str:
    """The config with KEY's line replaced (value None: removed; a new key is appended)."""
    lines = [ln for ln in config.splitlines() if ln.split()[:1] != [key]]
    return "\n".join(lines + ([f"{key} {value}"] if value is not None else [])) + "\n"


# ------------------------------------------------------------------ conversion

def test_convert_writes_a_valid_equivalent_scenario(tmp_path):
    make_dir(tmp_path)
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "converted.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "8 hosts, 1 switch, 8 links, 8 flows, cc hpcc" in r.stdout
    assert "relative to the current directory" in r.stdout
    r = cli("validate", tmp_path / "converted.yaml")
    assert r.returncode == 0, r.stderr
    s = rdmalab.load_scenario(tmp_path / "converted.yaml").data
    assert s["nic"] == {"framing": "ns3-hpcc", "mtu": "1000B", "ack_every": 1, "cnp": "ack_flag", "rto": "off",
                        "data_class": 3, "ack_class": "data", "pfc_holds_acks": True, "window": "bdp",
                        "window_scales_with_rate": True, "rate_change": "immediate", "qp_scheduler": "ns3-hpcc",
                        "base_rtt": "4160ns", "nack_repeat_interval": "500us"}
    assert s["switch"]["buffer"] == "32MiB" and s["switch"]["int"] is True
    # ns-3's paths and its whole-ns frame times.
    assert s["switch"]["ecmp"] == "ns3-hpcc" and s["tx_time"] == "ns3-truncated"
    assert s["switch"]["ecn"] == {"enabled": True, "thresholds": [
        {"rate": "100Gbps", "kmin": "400000B", "kmax": "1600000B", "pmax": 0.2}]}
    assert s["cc"] == {"algorithm": "hpcc", "params": {"eta": 0.95, "max_stage": 0, "rate_ai": "50Mbps",
                                                       "min_rate": "100Mbps", "fast_react": True, "window": False,
                                                       "base_rtt": "0ns"}}
    # SIMULATOR_STOP_TIME and start times go through Seconds(double): truncated to ns, as ns-3 does.
    assert s["duration"] == "2009999999ns"
    flows = s["workload"]["flows"]
    assert flows[2] == {"src": "h2", "dst": "h7", "size": "200000B", "start": "2000002611ns"}
    assert flows[3]["dport"] == 200 and "dport" not in flows[0]
    assert s["records"]["qlen_monitor"] == {"start": "2000000000ns", "end": "2000200000ns"}


def test_each_cc_mode_maps_its_keys(tmp_path):
    cases = {
        "1": ("dcqcn", {"g": 0.00390625, "alpha_period": "1us", "decrease_period": "4us", "increase_period": "900us",
                        "fast_recovery_stages": 1, "rate_ai": "50Mbps", "rate_hai": "100Mbps", "min_rate": "100Mbps",
                        "clamp_target_rate": False}),
        "7": ("timely", {"rate_ai": "50Mbps", "rate_hai": "100Mbps", "min_rate": "100Mbps", "t_low": "50us"}),
        "8": ("dctcp", {"g": 0.00390625, "rate_ai": "1Gbps", "min_rate": "100Mbps"}),
    }
    for mode, (name, params) in cases.items():
        cfg = make_dir(tmp_path, edit(CONFIG, "CC_MODE", mode))
        conv = convert(cfg, cwd=tmp_path)
        assert conv.scenario["cc"]["algorithm"] == name
        assert params.items() <= conv.scenario["cc"]["params"].items()
        assert conv.scenario["switch"]["int"] is False
        rdmalab.validate(rdmalab.scenario_from_dict(conv.scenario))
    # ACK_HIGH_PRIO, HAS_WIN, GLOBAL_T, ENABLE_QCN, ERROR_RATE_PER_LINK, --rto
    c = CONFIG
    for k, v in (("ACK_HIGH_PRIO", "1"), ("HAS_WIN", "0"), ("GLOBAL_T", "0"), ("ENABLE_QCN", "0"),
                 ("ERROR_RATE_PER_LINK", "0.001")):
        c = edit(c, k, v)
    conv = convert(make_dir(tmp_path, c), cwd=tmp_path, rto="1ms")
    nic = conv.scenario["nic"]
    # ACK_HIGH_PRIO 1 keeps ACKs with the data at switches (third.cc never tells its
    # switches); only PFC no longer holds them at the NIC.
    assert (nic["ack_class"], nic["pfc_holds_acks"], nic["window"], nic["base_rtt"], nic["rto"]) == \
        ("data", False, "none", "path", "1ms")
    assert conv.scenario["switch"]["ecn"]["enabled"] is False
    assert conv.scenario["links"][0] == {"between": [0, 8], "loss": 0.001} and len(conv.scenario["links"]) == 8


def test_ns3_value_syntax():
    assert parse_rate_bps("50Mb/s") == 50_000_000
    assert parse_rate_bps("100Gbps") == 100 * 10**9
    assert parse_rate_bps("1GB/s") == 8 * 10**9  # B is bytes in ns-3
    with pytest.raises(ValueError):
        parse_rate_bps("100 gigabits")
    assert seconds_to_ns("2.000002612") == 2000002611
    assert seconds_to_ns("2.000000612") == 2000000612
    assert seconds_to_ns("2.0002") == 2000199999  # what ns-3.17 gives (measured)


def test_refused_keys_are_named(tmp_path):
    refusals = {
        ("FOO_BAR", "7"): "FOO_BAR (line",
        ("CC_MODE", "10"): "HPCC-PINT",
        ("CC_MODE", "2"): "CC_MODE (line",
        ("MULTI_RATE", "1"): "MULTI_RATE (line",
        ("MULTI_RATE", None): "MULTI_RATE (absent; ns-3's default)",
        ("SAMPLE_FEEDBACK", "1"): "SAMPLE_FEEDBACK (line",
        ("L2_BACK_TO_ZERO", "1"): "L2_BACK_TO_ZERO (line",
        ("RATE_BOUND", "0"): "RATE_BOUND (line",
        ("LINK_DOWN", "100 0 1"): "LINK_DOWN (line",
        ("LINK_DOWN", "soon 0 8"): "LINK_DOWN (line",
        ("L2_ACK_INTERVAL", "0"): "L2_ACK_INTERVAL (line",
        ("L2_ACK_INTERVAL", "1500"): "L2_ACK_INTERVAL (line",
        ("KMIN_MAP", "1 25000000000 100"): "KMIN_MAP (line",
        ("RATE_AI", None): "RATE_AI: missing; ns-3 then runs with 0 bit/s",
        ("BUFFER_SIZE", "lots"): "BUFFER_SIZE (line",
    }
    for (key, value), needle in refusals.items():
        make_dir(tmp_path, edit(CONFIG, key, value))
        r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
        assert r.returncode == 2, (key, r.stdout)
        assert "scenario refused" in r.stderr and needle in r.stderr, (key, r.stderr)
    # A missing KMIN for a link rate names the rate, as ns-3's assert would stop on it.
    make_dir(tmp_path, edit(CONFIG, "KMIN_MAP", "1 25000000000 100"))
    assert "no entry for 100000000000 b/s (100Gbps)" in cli("hpcc", "run", "mix/config.txt", cwd=tmp_path).stderr
    # DCQCN without RP_TIMER / EWMA_GAIN: ns-3 would run with garbage / g = 0.
    c = edit(edit(edit(CONFIG, "CC_MODE", "1"), "RP_TIMER", None), "EWMA_GAIN", None)
    make_dir(tmp_path, c)
    err = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path).stderr
    assert "RP_TIMER: missing" in err and "EWMA_GAIN (absent; ns-3's default)" in err
    # An editor's byte-order mark glues itself to the first key, invisibly:
    # `ENABLE_QCN (line 1): unknown key` named a key that looked right.
    make_dir(tmp_path, "\ufeff" + CONFIG)
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert r.returncode == 2 and "\ufeff" not in r.stderr, r.stderr
    assert f"{CONFIG.split()[0]} (line 1): the file starts with a byte-order mark (U+FEFF)" in r.stderr, r.stderr
    for key, files in (("TOPOLOGY_FILE", {"topology": "\ufeff" + TOPOLOGY}), ("FLOW_FILE", {"flows": "\ufeff" + FLOWS})):
        make_dir(tmp_path, **files)
        r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
        assert r.returncode == 2 and "\ufeff" not in r.stderr, r.stderr
        assert f"{key}: `" in r.stderr and "` starts with a byte-order mark (U+FEFF)" in r.stderr, r.stderr
    make_dir(tmp_path, CONFIG + "FOO\u200b 1\n")  # other invisible characters are shown escaped
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert r.returncode == 2 and "'FOO\\u200b' (line" in r.stderr, r.stderr


def test_bad_flow_and_topology_lines_are_named(tmp_path):
    make_dir(tmp_path, flows=FLOWS.replace("7 0 3 200", "7 0 4 200"))
    assert "differs from line 2's pg 3" in cli("hpcc", "run", "mix/config.txt", cwd=tmp_path).stderr
    make_dir(tmp_path, flows=FLOWS.replace("7 0 3 200", "8 0 3 200"))
    assert "src 8 is not a host" in cli("hpcc", "run", "mix/config.txt", cwd=tmp_path).stderr
    make_dir(tmp_path, flows="9\n" + FLOWS.split("\n", 1)[1])
    assert "says 9 flows but only 8 follow" in cli("hpcc", "run", "mix/config.txt", cwd=tmp_path).stderr
    make_dir(tmp_path, topology=TOPOLOGY.replace("0 8 100Gbps", "0 8 100Gigs"))
    assert "is not an ns-3 data rate" in cli("hpcc", "run", "mix/config.txt", cwd=tmp_path).stderr
    # A node count far past what rdmalab builds is refused at once (its
    # all-hosts RTT scan used to walk 4 billion ids).
    first = TOPOLOGY.split("\n", 1)[0]
    make_dir(tmp_path, topology=TOPOLOGY.replace(first, "4000000000 " + first.split(" ", 1)[1], 1))
    r = cli("hpcc", "run", "mix/config.txt", cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and "1 to 1000000 nodes" in r.stderr, r.stderr


def test_a_link_after_the_counted_links_is_warned_of_not_dropped_silently(tmp_path):
    """ns-3 reads exactly the links the first line counts: a link added without
    raising the count is not part of the network, and rdmalab says so. The
    prose the HPCC repository's files end with is no link and not warned of."""
    make_dir(tmp_path)
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 0 and "link line" not in r.stderr, r.stderr
    one_more = TOPOLOGY.replace("7 8 100Gbps 0.001ms 0.000000\n", "7 8 100Gbps 0.001ms 0.000000\n1 8 100Gbps 0.001ms 0\n")
    make_dir(tmp_path, topology=one_more)
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "1 link line after the 8 links its first line counts (first on line 11) is not read; ns-3 reads " \
           "exactly that many, and so does rdmalab: raise the count to use it" in r.stderr, r.stderr
    # Once: the converter says it, and the scenario it runs holds the counted links only.
    assert r.stderr.count("link line") == 1 and r.stderr.count("1 8 100Gbps") == 0, r.stderr
    # The scenario `convert` writes names the file; running it, the core says it, once.
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr.count("link line") == 1, r.stderr
    assert "kind: hpcc_file, path: mix/topology.txt" in (tmp_path / "x.yaml").read_text()
    r = cli("run", "x.yaml", "--out", "o", "--quiet", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr.count("link line") == 1, r.stderr
    assert "topology: `1 8 100Gbps 0.001ms 0` — a link line after the 8 links the file's first line counts" \
        in r.stderr, r.stderr
    # Two of them (one after the prose), and blank lines among the links and
    # after them: both counted, the first named by its line in the file (15).
    two_more = one_more.replace("0.000000\n1 8 100Gbps", "0.000000\n\n\n1 8 100Gbps") + "2 8 100Gbps 0.001ms 0\n"
    assert two_more.splitlines()[14] == "1 8 100Gbps 0.001ms 0"
    make_dir(tmp_path, topology=two_more)
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert "2 link lines after the 8 links its first line counts (first on line 15) are not read" in r.stderr, \
        r.stderr


def test_a_negative_map_count_is_refused_not_looped_on(tmp_path):
    # `PMAX_MAP -1` made the tokenizer step backwards forever (found by tests/test_properties.py).
    make_dir(tmp_path, config=edit(CONFIG, "PMAX_MAP", "-1"))
    r = cli("hpcc", "run", "mix/config.txt", cwd=tmp_path, timeout=30)
    assert r.returncode == 2 and "PMAX_MAP (line" in r.stderr and "allowed: 0 to 64" in r.stderr, r.stderr


@pytest.mark.parametrize("key,value,other", [
    ("FCT_OUTPUT_FILE", "mix/flow.txt", "FLOW_FILE"),
    ("PFC_OUTPUT_FILE", "mix/topology.txt", "TOPOLOGY_FILE"),
    ("FCT_OUTPUT_FILE", "mix/config.txt", "the config file"),
    ("PFC_OUTPUT_FILE", "mix/fct.txt", "FCT_OUTPUT_FILE"),
])
def test_an_output_over_an_input_or_another_output_is_refused(tmp_path, key, value, other):
    make_dir(tmp_path, config=edit(CONFIG, key, value))
    before = {f.name: f.read_bytes() for f in (tmp_path / "mix").iterdir()}
    r = cli("hpcc", "run", "mix/config.txt", cwd=tmp_path)
    assert r.returncode == 2 and f"is the same file as {other}" in r.stderr, r.stderr
    assert {f.name: f.read_bytes() for f in (tmp_path / "mix").iterdir()} == before, "no file was touched"


def test_an_output_directory_that_is_a_file_is_named_as_each_caller_names_it(tmp_path):
    from rdmalab.hpcc import run_config
    from rdmalab.outputs import OutputDirError

    cfg = make_dir(tmp_path)
    f = tmp_path / "afile"
    f.write_text("")
    with pytest.raises(OutputDirError, match=r"^out_dir: `.*afile` is a file; give a directory"):
        run_config(cfg, out_dir=f)
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", "--out", "afile", cwd=tmp_path)
    assert r.returncode == 2 and "--out: `afile` is a file; give a directory" in r.stderr, r.stderr
    # Without --out the tables go beside FCT_OUTPUT_FILE: that directory, not an option, is named.
    (tmp_path / "mix" / "fct-rdmalab").write_text("")
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert ("the directory for rdmalab's tables beside FCT_OUTPUT_FILE (--out gives another): "
            f"`{tmp_path / 'mix' / 'fct-rdmalab'}` is a file; give a directory") in r.stderr, r.stderr


def test_run_reports_the_stop_time_it_was_given(tmp_path):
    # The run ends at SIMULATOR_STOP_TIME (2.01 s), whose last event comes a little before it.
    make_dir(tmp_path, config=CONFIG + "QLEN_MON_FILE mix/qlen.txt\nQLEN_MON_START 2000000000\nQLEN_MON_END 2000100000\n")
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "ran to the stop time it was given, 2.01 s (SIMULATOR_STOP_TIME 2.01)" in r.stdout, r.stdout


def test_ignored_keys_warn(tmp_path):
    c = CONFIG + "PAUSE_TIME 5\nDATA_RATE 100Gb/s\nLINK_DELAY 1us\nPINT_PROB 1.0\n"
    make_dir(tmp_path, c)
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for key in ("USE_DYNAMIC_PFC_THRESHOLD", "ENABLE_TRACE", "TRACE_FILE", "TRACE_OUTPUT_FILE", "L2_CHUNK_SIZE",
                "PAUSE_TIME", "DATA_RATE", "LINK_DELAY", "PINT_PROB"):
        assert re.search(rf"warning: {key} \(line \d+\)", r.stderr), key
    assert "INT_MULTI" not in r.stderr  # mapped under HPCC (switch.int_multi), not ignored
    assert "int_multi: 1" in (tmp_path / "x.yaml").read_text()
    assert "# warning: PAUSE_TIME" in (tmp_path / "x.yaml").read_text()


# What the ns-3 build (/work/ns3-hpcc, 9f4be2a) did with each value of a DCQCN
# key under CC_MODE 3, measured on this file: `runs` — the same fct.txt as with
# the key's usual value (ignored); `aborts` — "Could not parse rate"; `hangs` —
# no output within 20 s (its config stream failed on the token).
NS3_UNDER_HPCC = {
    ("RATE_HAI", "0Mb/s"): "runs", ("RATE_HAI", "5000"): "runs", ("RATE_HAI", "fast"): "aborts",
    ("RATE_HAI", "-5Mb/s"): "aborts", ("DCTCP_RATE_AI", "fast"): "aborts",
    ("ALPHA_RESUME_INTERVAL", "-1"): "runs", ("ALPHA_RESUME_INTERVAL", "1x"): "runs",
    ("ALPHA_RESUME_INTERVAL", "abc"): "hangs", ("RATE_DECREASE_INTERVAL", "-4"): "runs",
    ("RATE_DECREASE_INTERVAL", "x"): "hangs", ("RP_TIMER", "-900"): "runs", ("EWMA_GAIN", "5"): "runs",
    ("EWMA_GAIN", "abc"): "hangs", ("FAST_RECOVERY_TIMES", "-1"): "runs", ("FAST_RECOVERY_TIMES", "x"): "hangs",
    ("FAST_RECOVERY_TIMES", "5000000000"): "hangs", ("FAST_RECOVERY_TIMES", "-4294967296"): "hangs",
    ("CLAMP_TARGET_RATE", "7"): "runs", ("CLAMP_TARGET_RATE", "yes"): "hangs",
}
# The same for HPCC keys under CC_MODE 1.
NS3_UNDER_DCQCN = {("U_TARGET", "abc"): "hangs", ("INT_MULTI", "x"): "hangs"}


def test_what_ns3_cannot_read_is_what_stops_it():
    from rdmalab.hpcc.config import CC_KEYS, ns3_cannot_read

    for (key, value), ns3 in (NS3_UNDER_HPCC | NS3_UNDER_DCQCN).items():
        assert (ns3_cannot_read(CC_KEYS[key][0], value) is None) == (ns3 == "runs"), (key, value)


def test_keys_of_other_cc_modes_are_ignored_as_in_ns3_but_not_silently(tmp_path):
    """Under CC_MODE 3 ns-3 reads the DCQCN keys and never uses them. rdmalab
    says so once; a value ns-3 cannot read (it aborts or hangs on it) is
    refused; one it runs with but DCQCN would refuse is a warning of its own."""
    cfg = make_dir(tmp_path)
    base = convert(cfg, cwd=tmp_path)
    ignored = [w for w in base.warnings if w.startswith("CC_MODE (line")]
    assert ignored == ["CC_MODE (line 15): 3 (HPCC) does not use ALPHA_RESUME_INTERVAL, RATE_DECREASE_INTERVAL, "
                       "RP_TIMER, CLAMP_TARGET_RATE, FAST_RECOVERY_TIMES, EWMA_GAIN, RATE_HAI, DCTCP_RATE_AI "
                       "(keys of other modes): ignored, as in ns-3"], base.warnings
    for (key, value), ns3 in NS3_UNDER_HPCC.items():
        cfg = make_dir(tmp_path, edit(CONFIG, key, value))
        if ns3 != "runs":
            with pytest.raises(rdmalab.ScenarioError) as e:
                convert(cfg, cwd=tmp_path)
            assert f"{key} (line" in str(e.value) and f"`{value}` — not " in str(e.value), (key, value, str(e.value))
            assert "CC_MODE 3 (HPCC) does not use" in str(e.value)
            continue
        conv = convert(cfg, cwd=tmp_path)
        assert conv.scenario == base.scenario, (key, value)  # ignored
        own = [w for w in conv.warnings if w.startswith(f"{key} (line")]
        if key == "EWMA_GAIN" or key == "CLAMP_TARGET_RATE":
            # A gain of 5 (and a flag of 7) passes the converter under CC_MODE 1 too; only
            # the core refuses g > 1, on a parameter a run uses.
            assert own == [], own
        else:
            assert len(own) == 1 and f"`{value}` — " in own[0], (key, value, conv.warnings)
            assert own[0].endswith("ignored with CC_MODE 3 (HPCC), as in ns-3, but CC_MODE 1 (DCQCN)"
                                   + (" and 7 (TIMELY), which use" if key == "RATE_HAI" else ", which uses")
                                   + " it, would refuse it"), own
    # The same values under CC_MODE 1, which uses the keys: refused, with the same message.
    for key, value in (("ALPHA_RESUME_INTERVAL", "-1"), ("RATE_HAI", "0Mb/s"), ("FAST_RECOVERY_TIMES", "-1")):
        cfg = make_dir(tmp_path, edit(edit(CONFIG, "CC_MODE", "1"), key, value))
        with pytest.raises(rdmalab.ScenarioError, match=re.escape(f"{key} (line")):
            convert(cfg, cwd=tmp_path)


def test_hpcc_keys_under_dcqcn_are_ignored_the_same_way(tmp_path):
    c = edit(CONFIG, "CC_MODE", "1")
    conv = convert(make_dir(tmp_path, c), cwd=tmp_path)
    assert [w for w in conv.warnings if w.startswith("CC_MODE (line")] == [
        f"CC_MODE (line {len(c.splitlines())}): 1 (DCQCN) does not use DCTCP_RATE_AI, U_TARGET, MI_THRESH, "
        f"FAST_REACT, MULTI_RATE, SAMPLE_FEEDBACK, INT_MULTI (keys of other modes): ignored, as in ns-3"]
    conv = convert(make_dir(tmp_path, edit(c, "INT_MULTI", "0")), cwd=tmp_path)
    assert any(w.startswith("INT_MULTI (line") and "`0` — must be an integer from 1 to 65536; ignored with "
               "CC_MODE 1 (DCQCN), as in ns-3, but CC_MODE 3 (HPCC), which uses it, would refuse it" in w
               for w in conv.warnings), conv.warnings
    with pytest.raises(rdmalab.ScenarioError, match=r"U_TARGET \(line \d+\): `abc` — not a number"):
        convert(make_dir(tmp_path, edit(c, "U_TARGET", "abc")), cwd=tmp_path)
    # Every mode but HPCC's lists INT_MULTI among the keys it does not use; HPCC's maps it.
    for mode in ("7", "8"):
        conv = convert(make_dir(tmp_path, edit(CONFIG, "CC_MODE", mode)), cwd=tmp_path)
        (ignored,) = [w for w in conv.warnings if w.startswith("CC_MODE (line")]
        assert "INT_MULTI" in ignored and ("RATE_HAI" in ignored) == (mode == "8"), ignored


def test_missing_files_are_errors_not_hangs(tmp_path):
    r = cli("hpcc", "run", tmp_path / "no-such-config.txt", timeout=30)
    assert r.returncode == 2 and "cannot be read" in r.stderr
    r = cli("hpcc", "run", tmp_path, timeout=30)
    assert r.returncode == 2 and "is a directory" in r.stderr
    make_dir(tmp_path)
    (tmp_path / "mix" / "flow.txt").unlink()
    r = cli("hpcc", "run", "mix/config.txt", cwd=tmp_path, timeout=30)
    assert r.returncode == 2 and "FLOW_FILE (line 7): `mix/flow.txt` not found" in r.stderr


def test_paths_also_resolve_from_the_config_directory(tmp_path):
    cfg = make_dir(tmp_path)
    conv = convert(cfg, cwd="/")  # from elsewhere: mix/... is found under the config's parent
    assert conv.topology_path == tmp_path / "mix" / "topology.txt"
    assert any("parent directory" in n for n in conv.notes)
    assert conv.outputs["fct"] == tmp_path / "mix" / "fct.txt"


# ------------------------------------------------------------------ running: ns-3's output formats

def test_run_writes_ns3_format_outputs(tmp_path):
    make_dir(tmp_path)
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    mix = tmp_path / "mix"
    lines = (mix / "fct.txt").read_text().splitlines()
    assert len(lines) == 8
    flows = {}
    for ln in lines:
        f = ln.split()
        assert len(f) == 8 and all(re.fullmatch(r"[0-9a-f]{8}", x) for x in f[:2]), ln
        assert all(x.isdigit() for x in f[2:]), ln
        flows[(int(f[0], 16), int(f[1], 16))] = f
    # IPs encode node ids as ns-3 does; dport, size and the truncated start time come from the flow file.
    f = flows[(node_to_ip(7), node_to_ip(0))]
    assert f[0] == "0b000701" and f[2:6] == ["10000", "200", "1000", "2000002611"]
    # standalone FCT, ns-3's formula: 2 hops × (2 µs + 1000 B at 100 Gb/s) + (200000 + 200 × 48) B at 100 Gb/s.
    f = flows[(node_to_ip(0), node_to_ip(7))]
    assert f[3:6] == ["100", "200000", "2000000612"] and f[7] == "20928" and int(f[6]) > 20928
    # qlen.txt: `time: ns` then `switch if_index counts...`; one 100 ns sample per port at 2.0 s.
    q = (mix / "qlen.txt").read_text().splitlines()
    assert q[0] == "time: 2000000000"
    assert q[1:9] == [f"8 {i} 1" for i in range(1, 9)]
    # pfc.txt exists (5 fields a line when there are pauses); rdmalab's own tables sit beside.
    for ln in (mix / "pfc.txt").read_text().splitlines():
        assert len(ln.split()) == 5
    assert (mix / "fct-rdmalab" / "flows.parquet").exists() and (mix / "fct-rdmalab" / "summary.json").exists()
    assert f"wrote {mix / 'fct.txt'}" in r.stdout


# Two leaves (4, 5) of two hosts each under two spines (6, 7).
TWO_TIER = "8 4 8\n4 5 6 7\n" + "".join(f"{a} {b} 100Gbps 0.001ms 0.000000\n" for a, b in
                                         [(0, 4), (1, 4), (2, 5), (3, 5), (4, 6), (4, 7), (5, 6), (5, 7)])
CROSS_FLOWS = "8\n" + "".join(f"{s} {d} 3 100 2000000 2.000000000\n" for s, d in
                              [(0, 2), (1, 3), (0, 3), (1, 2), (2, 0), (3, 1), (2, 1), (3, 0)])


def test_link_down_takes_the_link_down_for_good_and_routes_around_it(tmp_path):
    """ns-3's LINK_DOWN t a b: at 2 s + t µs the link a–b goes down for good and
    every route is recomputed at once (third.cc's TakeDownLink); the flows
    that crossed it complete over the other spine."""
    config = edit(edit(CONFIG, "LINK_DOWN", "10 4 6"), "SIMULATOR_STOP_TIME", "2.1")
    make_dir(tmp_path, config=config, topology=TWO_TIER, flows=CROSS_FLOWS)
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "mix" / "fct.txt").read_text().splitlines()) == 8, "every flow completes"
    ev = pl.read_csv(tmp_path / "mix" / "fct-rdmalab" / "link_events.csv")
    assert ev.select("time_ps", "event").rows() == [(2_000_010_000_000, "down"), (2_000_010_000_000, "reroute")]
    assert ev["node_a"][0] == 4 and ev["node_b"][0] == 6


def test_pfc_file_format_under_an_incast(tmp_path):
    # DCQCN without a window and a small buffer: the 7-to-1 incast must pause the senders.
    c = edit(edit(edit(CONFIG, "CC_MODE", "1"), "HAS_WIN", "0"), "BUFFER_SIZE", "1")
    make_dir(tmp_path, c)
    r = cli("hpcc", "run", "mix/config.txt", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "mix" / "pfc.txt").read_text().splitlines()
    assert lines, "the incast paused someone"
    for ln in lines:
        t, node, ntype, ifi, typ = (int(x) for x in ln.split())
        assert t >= 2_000_000_000 and typ in (0, 1) and ifi >= 1
        assert ntype == (1 if node == 8 else 0)
    assert any(ln.endswith(" 1") for ln in lines)
    # ns-3's DCQCN assigns its rate without moving the next departure.
    assert convert(tmp_path / "mix" / "config.txt", cwd=tmp_path).scenario["nic"]["rate_change"] == "next_packet"


# ------------------------------------------------------------------ traffic generator

def test_traffic_generator_is_seeded_and_counts_exactly(tmp_path):
    a, b, c = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    args = ["hpcc", "traffic", "-c", "fbhdp", "-n", "16", "-l", "0.3", "-b", "100G", "-t", "0.02"]
    for out, seed in ((a, 7), (b, 7), (c, 8)):
        r = cli(*args, "-o", out, "--seed", seed)
        assert r.returncode == 0, r.stderr
    assert a.read_text() == b.read_text() and a.read_text() != c.read_text()
    lines = a.read_text().splitlines()
    assert lines[0] == str(len(lines) - 1)
    starts = []
    for ln in lines[1:]:
        src, dst, pg, dport, size, t = ln.split()
        assert src != dst and 0 <= int(src) < 16 and 0 <= int(dst) < 16 and (pg, dport) == ("3", "100")
        assert int(size) >= 1 and re.fullmatch(r"2\.0\d{8}", t)
        starts.append(float(t))
    assert starts == sorted(starts) and starts[0] >= 2.0 and starts[-1] < 2.02


def test_traffic_that_would_draw_too_many_flows_is_refused_before_drawing(tmp_path):
    # `-t 1e9` drew flows into memory until the machine ran out (a scenario's
    # Poisson entry has the same bound).
    out = tmp_path / "f.txt"
    r = cli("hpcc", "traffic", "-c", "websearch", "-n", "400", "-t", "1e9", "-o", out, timeout=30)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "about 8.766e+13 flows" in r.stderr and "allowed: at most 20000000" in r.stderr, r.stderr
    assert not out.exists()


def test_traffic_matches_the_cdf_mean_and_the_load():
    for name in ("websearch", "fbhdp", "alistorage2019", "googlerpc2008"):
        assert load_cdf(name)[-1][1] == 100
    cdf = load_cdf("fbhdp")
    assert cdf_mean(cdf) == pytest.approx(120421, rel=1e-3)  # traffic_gen's getAvg of FbHdp
    n, load, bw, secs = 32, 0.4, 100e9, 0.2
    flows = generate_flows(cdf, n, load, bw, secs, seed=1)
    sizes = [f[2] for f in flows]
    assert len(flows) > 20000
    assert sum(sizes) / len(sizes) == pytest.approx(cdf_mean(cdf), rel=0.05)
    expected = n * secs * bw * load / 8 / cdf_mean(cdf)  # arrivals = hosts × time / mean gap
    assert len(flows) == pytest.approx(expected, rel=0.03)
    assert sum(sizes) * 8 / (n * bw * secs) == pytest.approx(load, rel=0.06)
    # Destinations are uniform over the other hosts.
    counts = [0] * n
    for s, d, _, _ in flows:
        counts[d] += 1
    assert min(counts) > 0.8 * len(flows) / n and max(counts) < 1.2 * len(flows) / n


def test_shipped_cdfs_are_the_cores_files():
    root = Path(__file__).resolve().parent.parent
    files = {"websearch": "WebSearch_distribution.txt", "fbhdp": "FbHdp_distribution.txt",
             "alistorage2019": "AliStorage2019.txt", "googlerpc2008": "GoogleRPC2008.txt"}
    for name, f in files.items():
        text = (root / "crates" / "rdmalab-core" / "data" / "flow-size-cdf" / f).read_text()
        assert load_cdf(name) == parse_cdf(text, f)


def test_a_generated_flow_file_runs(tmp_path):
    make_dir(tmp_path)
    r = cli("hpcc", "traffic", "-c", "alistorage2019", "-n", "8", "-l", "0.3", "-b", "100G", "-t", "0.0003",
            "-o", tmp_path / "mix" / "flow.txt", "--seed", "2")
    assert r.returncode == 0, r.stderr
    conv = convert(tmp_path / "mix" / "config.txt", cwd=tmp_path)
    count = int((tmp_path / "mix" / "flow.txt").read_text().split()[0])
    assert len(conv.scenario["workload"]["flows"]) == count > 0


# ------------------------------------------------------------------ analysis

# 20 flows of sizes 100, 200, ..., 2000 B; standalone 1000 ns; fct chosen so slowdowns are known.
def _fct_line(node_s, node_d, dport, size, start, fct, ideal=1000):
    return f"{node_to_ip(node_s):08x} {node_to_ip(node_d):08x} 10000 {dport} {size} {start} {fct} {ideal}"


def test_analyze_buckets_by_size_with_ns3_filters(tmp_path):
    lines = []
    for i in range(1, 21):
        # slowdown i (flow i), except flow 1, whose fct is below its standalone FCT: clamped to 1.
        lines.append(_fct_line(i, 300 + i, 100, 100 * i, 2_000_000_000, 1000 * i if i > 1 else 500))
    lines.append(_fct_line(1, 2, 200, 50, 2_000_000_000, 9000))  # incast: only with -t 1 / 2
    lines.append(_fct_line(1, 2, 100, 5000, 2_000_000_000, 10**9))  # finishes at 3 s: cut by -T
    f = tmp_path / "fct.txt"
    f.write_text("\n".join(lines) + "\n")
    df = read_fct(f)
    assert df["src"].to_list()[:2] == [1, 2] and df["dst"][19] == 320
    sd = fct_slowdown([f], time_limit_ns=2_500_000_000, buckets=4)
    # 20 flows, 4 buckets of 5: slowdowns [1..5], [6..10], [11..15], [16..20]; nearest rank.
    assert sd["flows"].to_list() == [5, 5, 5, 5]
    assert sd["size_max_bytes"].to_list() == [500, 1000, 1500, 2000]
    assert sd["p50"].to_list() == [3.0, 8.0, 13.0, 18.0]
    assert sd["p99"].to_list() == [5.0, 10.0, 15.0, 20.0]
    assert sd["mean"].to_list() == [3.0, 8.0, 13.0, 18.0]
    # Without -T the 5000 B flow joins (21 flows); -t 1 keeps only the incast flow.
    assert fct_slowdown([f], buckets=4)["flows"].sum() == 21
    inc = fct_slowdown([f], dport=200, buckets=1)
    assert inc["flows"].to_list() == [1] and inc["p50"].to_list() == [9.0]
    # The CLI prints the same table, and compares files side by side.
    r = cli("hpcc", "analyze", f, f, "-T", "2500000000", "--buckets", "4")
    assert r.returncode == 0, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if ln.split()[:1] == ["1"])
    assert row.split() == ["1", "1000", "8.000", "10.000", "10.000", "10.000"] * 1 + \
        ["1000", "8.000", "10.000", "10.000", "10.000"]
    # Two columns: the ratios follow (same file: all 1). `a+b` pools runs: twice the flows.
    squeezed = [" ".join(ln.split()) for ln in r.stdout.splitlines()]
    assert "median |r-1| 0.0% 0.0% 0.0% 0.0%" in squeezed and "max |r-1| 0.0% 0.0% 0.0% 0.0%" in squeezed
    slow = tmp_path / "slow.txt"
    slow.write_text("\n".join(_fct_line(i, 300 + i, 100, 100 * i, 2_000_000_000, 2000 * i) for i in range(1, 21)) + "\n")
    r = cli("hpcc", "analyze", f, f"{f}+{slow}", "-T", "2500000000", "--buckets", "4")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("flows")[-1].split()[:2] == ["20", "40"]
    # Bucket 0 pools slowdowns 1..5 with 2, 4, .. 10: p50 4 (was 3), p99 10 (was 5).
    ratios = r.stdout.split("ratio")[1].splitlines()
    assert ratios[2].split()[:4] == ["0", "1.333", "2.000", "2.000"]
    r = cli("hpcc", "analyze", f, "--csv", "-t", "2", "--buckets", "2")
    assert r.stdout.splitlines()[0].startswith("file,bucket,flows")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2 3\n")
    r = cli("hpcc", "analyze", bad)
    assert r.returncode == 2 and "8 fields" in r.stderr
    # Each was read: a value past 64 bits failed in Polars with a traceback, a
    # negative size was bucketed, a standalone FCT of 0 became a slowdown of fct / 1 ns.
    for fields, says in [("99999999999999999999 4000", "beyond 64 bits"), ("5000 0", "standalone_fct is 0"),
                         ("-5000 4000", "integers of 0 or more"), ("5_000 4000", "integers of 0 or more")]:
        bad.write_text(f"0b000001 0b000101 10000 100 1000 2000000000 {fields}\n")
        r = cli("hpcc", "analyze", bad)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, (fields, r.stderr)
    # An empty name in a pooled list was read as `.`, "a directory"; a dport
    # past 16 bits was taken and filtered every flow away.
    for pooled in (f"{f}+", f"+{f}", f"{f}++{f}"):
        r = cli("hpcc", "analyze", pooled)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"`{pooled}` has an empty file name between, before or after its `+` signs" in r.stderr, r.stderr
    for port in ("70000", "-1"):
        r = cli("hpcc", "analyze", f, "--dport", port)
        assert r.returncode == 2 and "allowed: a UDP port, 0 to 65535" in r.stderr, r.stderr
    assert cli("hpcc", "analyze", f, "--dport", "65535").returncode == 0


# What ns-3 HPCC's analysis/fct_analysis.py (HPCC repository 9f4be2a) printed
# for the file `_fct_analysis_input` writes, run with Python 2.7 and LC_ALL=C,
# as `-p fct_fat` with both of its CCs reading that file: with no options
# (first list) and with `-s 25 -T 2000040000` (second).
FCT_ANALYSIS_S5 = """\
0.000 1000	10.000 10.000 10.000
0.050 1000	1234.570 1234.570 1234.570
0.100 1000	18.500 18.500 18.500
0.150 1000	3703.700 3703.700 3703.700
0.200 1000	4938.270 4938.270 4938.270
0.250 1000	55.500 55.500 55.500
0.300 1000	617.280 617.280 617.280
0.350 1000	740.736 740.736 740.736
0.400 1000	84.000 84.000 84.000
0.450 3000	9.250 9.250 9.250
0.500 3000	123.456 123.456 123.456
0.550 3000	2469.130 2469.130 2469.130
0.600 3000	493.824 493.824 493.824
0.650 3000	64.750 64.750 64.750
0.700 3000	7407.400 7407.400 7407.400
0.750 70000	246.912 246.912 246.912
0.800 70000	42.000 42.000 42.000
0.850 500000	8641.970 8641.970 8641.970
0.900 500000	27.750 27.750 27.750
0.950 500000	6172.840 6172.840 6172.840
"""
FCT_ANALYSIS_S25 = """\
0.000 1000	10.000 10.500 10.500
0.250 1000	8.000 18.500 18.500
0.500 3000	4.995 9.250 9.250
0.750 500000	6.000 21.000 21.000
"""


def _fct_analysis_input(path):
    """45 flows: sizes repeat (ties, which the script's `sort -n -k 2` orders
    by the line's bytes: slowdown `10.5` before `9.25`), slowdowns below 1
    and with more than six digits (awk writes `%.6g`), incast flows, and
    one that ends after the script's 3 s default."""
    fcts = [10500, 9250, 999, 1234567, 2000, 123456]
    sizes = [1000, 1000, 3000, 1000, 70000, 3000, 500000]
    lines = []
    for k in range(45):
        dport = 200 if k % 13 == 12 else 100
        start, fct = 2000000000 + 1000 * k, fcts[k % 6] * (1 + k // 6)
        if k == 30:
            start, fct = 2999999000, 5000
        lines.append(f"0b000{k % 10}01 0b000{(k + 3) % 10}01 10000 {dport} {sizes[k % 7]} {start} {fct} 1000")
    path.write_text("\n".join(lines) + "\n")


def test_analyze_as_fct_analysis_prints_what_the_script_prints(tmp_path):
    f = tmp_path / "fct.txt"
    _fct_analysis_input(f)

    def lines(*extra):
        r = cli("hpcc", "analyze", "--as-fct-analysis", *extra, f, f)
        assert r.returncode == 0, r.stderr
        head, *rest = r.stdout.splitlines(keepends=True)
        assert head.startswith("# as analysis/fct_analysis.py")
        return "".join(rest)

    two = lambda table: "".join(ln.rstrip("\n") + ln[ln.index("\t"):] for ln in table.splitlines(keepends=True))
    assert lines() == two(FCT_ANALYSIS_S5)
    assert lines("--buckets", "4", "-T", "2000040000") == two(FCT_ANALYSIS_S25)
    # rdmalab's own table of the same flows is nearest-rank, 44 flows in its
    # buckets (the script drops the largest): not these numbers.
    assert "10.500" not in cli("hpcc", "analyze", f, "--buckets", "4", "-T", "2000040000").stdout.split("\n")[3]
    r = cli("hpcc", "analyze", "--as-fct-analysis", "--csv", f)
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    # A divisor of 100 only (the script's -s), and enough flows for every bucket.
    r = cli("hpcc", "analyze", "--as-fct-analysis", "--buckets", "7", f)
    assert r.returncode == 2 and "--buckets: 7" in r.stderr and "divisor of 100" in r.stderr
    r = cli("hpcc", "analyze", "--as-fct-analysis", "-T", "2000010000", f)
    assert r.returncode == 2 and "2 flows left" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_global_t_sets_ns3s_own_max_rtt(tmp_path, root):
    from rdmalab.hpcc.config import ns3_max_rtt_ns, parse_topology

    # 8 hosts on one switch, 1 us links at 100 Gb/s: 2 x 2 us + 2 x 80 ns (1000 B per hop).
    make_dir(tmp_path)
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "base_rtt: 4160ns" in (tmp_path / "x.yaml").read_text()
    # The HPCC paper's fat tree: 6 links of 1 us; 100 Gb/s at the edges, 400 Gb/s inside.
    fat = (root / "crates/rdmalab-core/data/topologies/hpcc-fat-tree-320-hosts.txt").read_text()
    assert ns3_max_rtt_ns(parse_topology(fat, "fat"), 1000) == 2 * 6000 + 2 * 80 + 4 * 20


def _max_rtt_per_host(topo, payload):
    """ns-3's maxRtt the way third.cc finds it: one BFS from every host (the
    BFS itself is checked against a worked number below)."""
    from rdmalab.hpcc.config import _max_rtt_from, _neighbours

    hosts = [n for n in range(topo.nodes) if n not in topo.switches]
    nbrs = _neighbours(topo)
    return max([0] + [_max_rtt_from(h, nbrs, topo.switches, hosts, payload) for h in hosts])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_max_rtt_searched_once_per_group_of_alike_hosts_is_ns3s(data):
    # Random fabrics: hosts hung on one or two switches with few distinct
    # link speeds and delays (so many hosts are alike), host-to-host links,
    # switch meshes with unequal delays (BFS order, not the shortest path).
    from rdmalab.hpcc.config import Topology, ns3_max_rtt_ns

    n_sw = data.draw(st.integers(1, 5))
    n_host = data.draw(st.integers(1, 12))
    nodes = n_sw + n_host
    switches = set(data.draw(st.permutations(range(nodes)))[:n_sw])
    hosts = [n for n in range(nodes) if n not in switches]
    sw = sorted(switches)
    link = st.tuples(st.sampled_from([25, 100, 400]), st.sampled_from([1, 2, 5]))
    links = []
    for h in hosts:
        for s in sorted(set(data.draw(st.lists(st.sampled_from(sw), min_size=0, max_size=2)))):
            g, us = data.draw(link)
            links.append((h, s, g * 10**9, us * 10**6, 0.0))
    for a, b in data.draw(st.lists(st.tuples(st.sampled_from(range(nodes)), st.sampled_from(range(nodes))),
                                   max_size=6)):
        if a != b:
            g, us = data.draw(link)
            links.append((a, b, g * 10**9, us * 10**6, 0.0))
    topo = Topology(nodes=nodes, switches=switches, links=links, text="", verbatim_ok=False)
    payload = data.draw(st.sampled_from([1, 1000, 4096]))
    assert ns3_max_rtt_ns(topo, payload) == _max_rtt_per_host(topo, payload)


def test_max_rtt_counts_paths_only_unlike_hosts_have(root):
    # Two fabrics where the farthest pair is found only from hosts that look
    # alike on their first switch link: a host-to-host link, and a second
    # switch link. Both ends of that pair must be searched.
    from rdmalab.hpcc.config import Topology, ns3_max_rtt_ns

    g100, short, long = 100 * 10**9, 1 * 10**6, 50 * 10**6
    # Hosts 0-3 on switch 4; 1 and 3 also joined directly by a long link.
    direct = Topology(nodes=5, switches={4}, text="", verbatim_ok=False, links=[
        (0, 4, g100, short, 0.0), (1, 4, g100, short, 0.0), (2, 4, g100, 2 * short, 0.0),
        (3, 4, g100, 2 * short, 0.0), (1, 3, g100, long, 0.0)])
    # Hosts 1 and 3 share switch 6 over long links; 0 and 1 look alike on switch 4, 2 and 3 on 5.
    second = Topology(nodes=7, switches={4, 5, 6}, text="", verbatim_ok=False, links=[
        (0, 4, g100, short, 0.0), (1, 4, g100, short, 0.0), (1, 6, g100, long, 0.0),
        (2, 5, g100, short, 0.0), (3, 5, g100, short, 0.0), (3, 6, g100, long, 0.0)])
    for topo in (direct, second):
        assert ns3_max_rtt_ns(topo, 1000) == _max_rtt_per_host(topo, 1000) >= 2 * 50_000


def test_max_rtt_of_the_shipped_fat_tree_matches_the_per_host_search(root):
    from rdmalab.hpcc.config import ns3_max_rtt_ns, parse_topology

    fat = parse_topology((root / "crates/rdmalab-core/data/topologies/hpcc-fat-tree-320-hosts.txt").read_text(), "fat")
    assert ns3_max_rtt_ns(fat, 1000) == _max_rtt_per_host(fat, 1000) == 2 * 6000 + 2 * 80 + 4 * 20


def test_a_config_without_qlen_mon_file_warns_that_ns3_would_crash(tmp_path):
    # third.cc always starts its queue monitor; without a file it writes to NULL.
    make_dir(tmp_path, edit(CONFIG, "QLEN_MON_FILE", None))
    r = cli("hpcc", "convert", "mix/config.txt", "--out", "x.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "QLEN_MON_FILE: not set; ns-3 itself crashes (segfault) at QLEN_MON_START" in r.stderr


def test_the_shipped_ns3_input_directory_runs(tmp_path, root):
    import shutil

    shutil.copytree(root / "examples" / "hpcc", tmp_path / "hpcc")
    r = cli("hpcc", "run", "mix/config-hpcc.txt", "--quiet", cwd=tmp_path / "hpcc")
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "hpcc" / "mix" / "fct-hpcc.txt").read_text().splitlines()
    assert len(lines) == 1423  # every flow of the shipped WebSearch flow file completes
    assert (tmp_path / "hpcc" / "mix" / "qlen-hpcc.txt").stat().st_size > 0
