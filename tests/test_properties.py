"""Property-based checks of every input rdmalab reads (issue 15): a scenario,
an ns-3 HPCC config directory or a sweep file, however wrong, is either run
or refused with a message that names a key or a line; never a traceback of
another kind, a panic, a hang or a memory blow-up.

Inputs are grown from valid ones by setting keys (known keys at any depth,
and unknown ones) to values from a pool of troublesome ones: wrong types,
negative, zero, huge, non-finite, wrong units, empty containers. Hypothesis
keeps a failing input small and prints it. The example counts keep this
file to about a minute in CI; raise them locally to search harder
(`RDMALAB_PROPERTY_EXAMPLES=2000`).
"""

from __future__ import annotations

import copy
import os
import re
import resource
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
# A valid ns-3 input directory to grow from: test_hpcc's (the simulator's own
# config, an 8-host star, a 7-to-1 incast).
from test_hpcc import CONFIG, FLOWS, TOPOLOGY

import rdmalab
from rdmalab.runner import validate

EXAMPLES = int(os.environ.get("RDMALAB_PROPERTY_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

BASE = {
    "name": "p",
    "seed": 1,
    "duration": "200us",
    "topology": {"kind": "single_switch", "hosts": 4, "host_link": {"rate": "100Gbps", "delay": "1us"}},
    "nic": {"mtu": "1024B", "rto": "100us"},
    "switch": {"buffer": "2MB", "pfc": {"enabled": True}, "ecn": {"enabled": True}},
    "cc": {"algorithm": "dcqcn"},
    "records": {"sample_interval": "20us"},
    "workload": {
        "flows": [{"src": 0, "dst": 1, "size": "64KB"}, {"src": 2, "dst": 1, "size": "8KB", "start": "5us"}],
        "perftest": [{"src": "h3", "dst": "h0", "message_size": "16KB", "queue_depth": 2}],
        "incast": {"senders": 2, "receiver": "h1", "size": "10KB"},
    },
}

# Keys the generator targets (besides any key of BASE and unknown ones).
EXTRA_KEYS = [
    ("topology", "kind"), ("topology", "k"), ("topology", "leaves"), ("topology", "spines"),
    ("topology", "hosts_per_leaf"), ("topology", "fabric_link"), ("switch", "pfc", "headroom"),
    ("switch", "ecn", "thresholds"), ("switch", "scheduling"), ("switch", "int"), ("nic", "window"),
    ("nic", "loss_recovery"), ("nic", "ack_every"), ("nic", "cc_scope"), ("cc", "params"),
    ("cc", "params", "rate_ai"), ("control", "placement"), ("control", "threads"), ("control", "cc_header"),
    ("workload", "poisson"), ("workload", "poisson", "load"), ("workload", "poisson", "cdf"),
    ("records", "qlen_monitor"), ("run", "max_events"), ("links",),
]

TROUBLE = st.one_of(
    st.sampled_from([
        None, True, False, 0, -1, 1, 2, 7, 65536, 2**31, 2**53 + 1, 2**63, 2**64, -(2**63), 1e308, -0.0, 0.5,
        float("nan"), float("inf"), "", " ", "0", "-1", "1e400B", "nanGbps", "100", "100Gbps", "1us", "0ps",
        "3601s", "1TiB", "1.5TiB", "64B", "9000B", "18446744073709551616B", "-5us", "1e-30s", "10Tbps",
        "100Tbps", "websearch", "hadoop", "none", "hpcc", "swift", "asic", "swcc", "dpa", "h0", "h99", "s0",
        "fat_tree", "leaf_spine", "hpcc_file", "off", "on", "é", "\x00", "a" * 300, [], {}, [1, 2], [[]],
        {"a": 1}, {"rate": "1Gbps"}, [{"src": 0, "dst": 0, "size": "1KB"}],
    ]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=12),
)


def _known_paths(d, prefix=()):
    for k, v in d.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _known_paths(v, prefix + (k,))


PATHS = sorted(set(_known_paths(BASE)) | set(EXTRA_KEYS)) + [("workload", "flows", 0, "size"),
                                                            ("workload", "flows", 1, "start"),
                                                            ("workload", "flows", 0, "src")]


def _set(d, path, value):
    cur = d
    for k in path[:-1]:
        nxt = cur[k] if (isinstance(cur, list) and isinstance(k, int) and k < len(cur)) or \
            (isinstance(cur, dict) and isinstance(cur.get(k), (dict, list))) else None
        if nxt is None:
            if not isinstance(cur, dict):
                return
            cur[k] = {}
            nxt = cur[k]
        cur = nxt
    if isinstance(cur, dict) or (isinstance(cur, list) and isinstance(path[-1], int) and path[-1] < len(cur)):
        cur[path[-1]] = value


edits = st.lists(
    st.tuples(st.one_of(st.sampled_from(PATHS), st.tuples(st.sampled_from(["bogus", "nic", "cc"]),
                                                          st.text(min_size=1, max_size=6))), TROUBLE),
    min_size=1, max_size=4,
)

#: A refusal names where: a key path (`a.b[0].c`), a line, a file or the scenario.
NAMES_WHERE = re.compile(r"[a-z_]+(\.[a-z_0-9\[\]]+)*\s*[:(`]|line \d+|\(scenario\)|topology|workload", re.I)


def _trace(*what) -> None:
    """RDMALAB_PROPERTY_TRACE=FILE: write each input before trying it (to find a hang)."""
    f = os.environ.get("RDMALAB_PROPERTY_TRACE")
    if f:
        with open(f, "w") as out:
            out.write(repr(what) + "\n")


def _bounded_rss():
    # ru_maxrss is in KB on Linux: the whole test process stays under 6 GB.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 6 * 1024 * 1024


@SETTINGS
@given(edits)
def test_any_scenario_is_run_or_refused_naming_a_key(tmp_path_factory, changes):
    data = copy.deepcopy(BASE)
    for path, value in changes:
        _set(data, path, value)
    _trace(changes)
    t = time.monotonic()
    try:
        sc = rdmalab.scenario_from_dict(data)
        validate(sc)
    except rdmalab.ScenarioError as e:
        msg = str(e)
        assert msg.strip() and NAMES_WHERE.search(msg), (changes, msg)
        assert time.monotonic() - t < 10, ("slow refusal", changes)
        return
    # Accepted: it must run to the end without any other error, in bounded time.
    info = sc.data if hasattr(sc, "data") else None
    duration_ok = True
    if isinstance(info, dict):
        d = str(info.get("duration", ""))
        duration_ok = d.endswith("us") and d[:-2].replace(".", "").isdigit() and float(d[:-2]) <= 1000
    if duration_ok:
        try:
            rdmalab.run(sc)
        except rdmalab.RunError as e:
            assert str(e).strip(), changes
        assert time.monotonic() - t < 60, ("slow run", changes)
    _bounded_rss()


CONFIG_VALUES = st.one_of(
    st.sampled_from(["0", "1", "-1", "2", "3", "7", "8", "10", "0.5", "1e9", "1e400", "nan", "inf", "", "x",
                     "100Gb/s", "0Mb/s", "mix/flow.txt", "mix/nope.txt", "/dev/zero", "1 2", "1 100000000000",
                     "99999999999999999999", "-0.0001"]),
    st.text(alphabet="0123456789.-eE xGbMs/", max_size=10),
)
CONFIG_KEYS = [ln.split()[0] for ln in CONFIG.splitlines() if ln.strip()] + ["BOGUS_KEY"]
TOPO_LINES = st.one_of(
    st.sampled_from(["5 1 4", "0 0 0", "4000000000 1 1", "5 9 4", "-1 1 1", "5 1", "4", "9",
                     "0 4 100Gbps 0.001ms 0", "0 0 100Gbps 1us 0", "0 4 0Gbps 1us 0", "0 4 100Gbps -1us 0",
                     "0 4 100Gbps 1us 2", "0 4 1e400bps 1us 0", "7 4 100Gbps 1us 0", ""]),
    st.text(alphabet="0123456789 .-eGbpsmu", max_size=16),
)
FLOW_LINES = st.one_of(
    st.sampled_from(["3", "0", "99", "-1", "0 1 3 100 20000 2.0", "0 0 3 100 1 2.0", "0 1 3 100 0 2.0",
                     "0 1 3 100 -5 2.0", "0 9 3 100 10 2.0", "0 1 3 100 1e30 2.0", "0 1 3 100 10 nan",
                     "0 1 3 100 10 1e30", "0 1 8 100 10 2.0", "0 1 3 70000 10 2.0", ""]),
    st.text(alphabet="0123456789 .-e", max_size=16),
)


def _replace_line(text: str, i: int, line: str) -> str:
    lines = text.splitlines()
    lines[i % len(lines)] = line
    return "\n".join(lines) + "\n"


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(CONFIG_KEYS), CONFIG_VALUES), max_size=4),
       st.lists(st.tuples(st.integers(0, 10), TOPO_LINES), max_size=2),
       st.lists(st.tuples(st.integers(0, 10), FLOW_LINES), max_size=2))
def test_any_ns3_input_directory_is_run_or_refused_naming_a_line(tmp_path_factory, cfg_edits, topo_edits,
                                                                  flow_edits):
    from rdmalab.hpcc.config import convert

    d = tmp_path_factory.mktemp("ns3")
    (d / "mix").mkdir()
    lines = {ln.split()[0]: ln for ln in CONFIG.splitlines() if ln.strip()}
    for k, v in cfg_edits:
        lines[k] = f"{k} {v}".rstrip()
    (d / "mix" / "config.txt").write_text("\n".join(lines.values()) + "\n")
    topo, flows = TOPOLOGY, FLOWS
    for i, ln in topo_edits:
        topo = _replace_line(topo, i, ln)
    for i, ln in flow_edits:
        flows = _replace_line(flows, i, ln)
    (d / "mix" / "topology.txt").write_text(topo)
    (d / "mix" / "flow.txt").write_text(flows)
    (d / "mix" / "trace.txt").write_text("0\n")
    _trace(cfg_edits, topo_edits, flow_edits)
    t = time.monotonic()
    try:
        conv = convert(d / "mix" / "config.txt", cwd=d)
        validate(rdmalab.scenario_from_dict(conv.scenario))
    except rdmalab.ScenarioError as e:
        msg = str(e)
        assert msg.strip() and re.search(r"[A-Z_]{3,}|line \d+|topology|flow", msg), (cfg_edits, msg)
    assert time.monotonic() - t < 20, ("slow", cfg_edits, topo_edits, flow_edits)
    _bounded_rss()


SWEEP_VALUES = st.one_of(TROUBLE, st.lists(TROUBLE, max_size=3),
                         st.dictionaries(st.sampled_from(["seed", "duration", "cc.algorithm", "nope", "a.b",
                                                          "topology.hosts", "workload.poisson.load"]),
                                         st.lists(TROUBLE, max_size=3), max_size=3))


@SETTINGS
@given(st.dictionaries(st.sampled_from(["base", "grid", "zip", "seeds", "name", "figures", "runs", "bogus",
                                        "overrides", "workers"]), SWEEP_VALUES, max_size=4))
def test_any_sweep_file_is_expanded_or_refused_with_a_message(tmp_path_factory, extra):
    from rdmalab.sweep import SweepError
    from rdmalab.sweep.spec import sweep_from_dict

    d = tmp_path_factory.mktemp("sweep")
    (d / "base.yaml").write_text("name: b\nduration: 100us\ntopology: {kind: single_switch, hosts: 3, "
                                 "host_link: {rate: 100Gbps}}\nworkload: {flows: [{src: 0, dst: 1, size: 1KB}]}\n")
    spec = {"base": "base.yaml", "grid": {"seed": [1, 2]}}
    spec.update(extra)
    _trace(spec)
    t = time.monotonic()
    try:
        sweep_from_dict(spec, d)
    except (SweepError, rdmalab.ScenarioError) as e:
        assert str(e).strip(), spec
    assert time.monotonic() - t < 20, ("slow", spec)
    _bounded_rss()


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
