"""Controllers written in Python run behind the same interface as built-ins."""

import json

import pyarrow.parquet as pq
import pytest

import rdmalab

BASE = {
    "duration": "3ms",
    "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
    "workload": {"perftest": [
        {"src": "h0", "dst": "h2", "message_size": "1MB", "queue_depth": 2},
        {"src": "h1", "dst": "h2", "message_size": "1MB", "queue_depth": 2},
    ]},
    "records": {"sample_interval": "50us"},
}


def scenario(tmp_path, source: str, cls: str, params=None, **extra):
    (tmp_path / "mycc.py").write_text(source)
    cc = {"algorithm": "python", "class": f"mycc.py:{cls}"}
    if params is not None:
        cc["params"] = params
    return rdmalab.scenario_from_dict(dict(BASE, cc=cc, **extra), base_dir=tmp_path)


HALVE = '''
from rdmalab import Controller
class Halve(Controller):
    subscriptions = ["CNP", "ACK"]
    def __init__(self, floor_gbps=5):
        self.floor = int(floor_gbps * 1e9)
        self.events = 0
    def on_event(self, ev, ctx):
        if ev.kind == "CNP":
            ctx.set_rate(max(self.floor, ctx.rate_bps // 2))
        elif ev.kind == "ACK" and ev.acked_bytes > 0:
            ctx.set_rate(min(ctx.line_rate_bps, ctx.rate_bps + 100_000_000))
'''


def test_a_python_controller_sets_the_dequeue_rate(tmp_path):
    res = rdmalab.run(scenario(tmp_path, HALVE, "Halve", {"floor_gbps": 10}), out_dir=tmp_path / "out")
    assert res.summary["cc"] == "python:Halve"
    assert res.summary["cnps_sent"] > 0
    rates = [r["dequeue_rate_bps"] for r in pq.read_table(tmp_path / "out" / "qp_samples.parquet").to_pylist()]
    assert min(rates) >= 10e9 and min(rates) < 100e9, "the controller's rates reached the NIC"


def test_it_runs_at_a_placement_too(tmp_path):
    sc = scenario(tmp_path, HALVE, "Halve", control={"placement": "dpa"})
    res = rdmalab.run(sc, out_dir=tmp_path / "out")
    delays = pq.read_table(tmp_path / "out" / "control_delays.parquet").to_pylist()
    assert res.summary["control_actions_installed"] == len(delays) > 0


def test_an_exception_names_the_controller_and_the_event(tmp_path):
    src = HALVE + '''
class Broken(Halve):
    def on_event(self, ev, ctx):
        if ev.kind == "CNP":
            raise ZeroDivisionError("my bug")
'''
    with pytest.raises(rdmalab.RunError) as e:
        rdmalab.run(scenario(tmp_path, src, "Broken"))
    msg = str(e.value)
    assert "controller `python:Broken`" in msg and "CNP event" in msg and "my bug" in msg


def test_an_invalid_action_is_refused(tmp_path):
    src = HALVE + '''
class TooFast(Halve):
    def on_event(self, ev, ctx):
        ctx.set_rate(ctx.line_rate_bps * 2)
'''
    with pytest.raises(rdmalab.RunError, match="above the line rate"):
        rdmalab.run(scenario(tmp_path, src, "TooFast"))


@pytest.mark.parametrize("rate,message", [
    ("-5", "set_rate(-5): allowed: a finite rate in bit/s"),
    ("float('nan')", "set_rate(NaN): allowed"),
    ("1e30", "above the line rate"),
    # As given, not as u64::MAX bit/s (what a rate past u64 saturated to).
    ("1e30", "set_rate(1e+30): above the line rate 100Gbps; allowed:"),
    ("10**30", "set_rate(1000000000000000000000000000000): above the line rate"),
    # As given: it rounded to 0 and was refused as a rate of 0 bit/s.
    ("0.4", "set_rate(0.4): rounds to 0 bit/s; allowed: a finite rate in bit/s"),
    ("0", "dequeue rate of 0 bit/s (allowed: 1 bit/s up to the line rate)"),
])
def test_a_rate_out_of_range_is_refused_naming_it(tmp_path, rate, message):
    src = HALVE + f'''
class Odd(Halve):
    def on_event(self, ev, ctx):
        ctx.set_rate({rate})
'''
    with pytest.raises(rdmalab.RunError) as e:
        rdmalab.run(scenario(tmp_path, src, "Odd"))
    assert message in str(e.value) and "OverflowError" not in str(e.value), str(e.value)


@pytest.mark.parametrize("action,message", [
    ("ctx.set_rate(True)", "set_rate(True): allowed: a finite rate in bit/s (an int or a float)"),
    ("ctx.set_rate('10Gbps')", "set_rate('10Gbps'): allowed: a finite rate in bit/s"),
    ("ctx.set_window(-5)", "set_window(-5): allowed: a whole number of bytes, at least 1, or None"),
    ("ctx.set_window(1500.5)", "set_window(1500.5): allowed: a whole number of bytes"),
    ("ctx.set_timer(0, -1)", "set_timer(0, -1): allowed: an absolute time in ps, a whole number (an int), now ("),
    ("ctx.set_timer(0, ctx.now_ps - 1)", "allowed: an absolute time in ps, a whole number (an int), now ("),
    # A float later than now: the fault is its type, which the message now names.
    ("ctx.set_timer(0, ctx.now_ps + 10.0)", "allowed: an absolute time in ps, a whole number (an int), now ("),
    ("ctx.set_timer(4, ctx.now_ps)", "allowed: timer slots 0 to 3"),
    ("ctx.cancel_timer(-1)", "cancel_timer(-1): allowed: timer slots 0 to 3"),
    ("ctx.set_path(70000)", "set_path(70000): allowed: a UDP source port, 0 to 65535"),
    ("ctx.request_probe(-1)", "request_probe(-1): allowed: a UDP source port, 0 to 65535"),
    ("ctx.send_oob([1, 2, 3, 2**32])", "send_oob([1, 2, 3, 4294967296]): allowed: a list of four whole numbers"),
    ("ctx.send_oob([1, 2, 3])", "send_oob([1, 2, 3]): allowed: a list of four whole numbers"),
    ("ctx.set_share(2**40)", "set_share(1099511627776): allowed: packets per turn, 1 to 65536"),
    ("ctx.set_class(256)", "set_class(256): allowed: a traffic class, 1 to 7"),
    ("ctx.set_cc_header_word(0, -1)", "set_cc_header_word(0, -1): allowed: a 32-bit word, 0 to 4294967295"),
    ("return ctx.rate_bps // 2", "returned 50000000000 from on_event; allowed: None (record actions on ctx"),
    # A misspelt field names the ones there are and the closest.
    ("ev.ecn", "an Event has no attribute `ecn` (did you mean `ece`?); it has: acked_bytes, acked_through,"),
    ("ctx.now", "a Context has no attribute `now` (did you mean `now_ps`?); it has: "),
    ("ctx.set_rates(1e9)", "a Context has no attribute `set_rates` (did you mean `set_rate`?)"),
])
def test_an_action_out_of_range_names_the_call_and_what_is_allowed(tmp_path, action, message):
    src = HALVE + f'''
class Odd(Halve):
    def on_event(self, ev, ctx):
        if ev.kind == "ACK":
            {action}
'''
    with pytest.raises(rdmalab.RunError) as e:
        rdmalab.run(scenario(tmp_path, src, "Odd", duration="300us"))
    msg = str(e.value)
    assert "controller `python:Odd` on QP 0 handling an ACK event" in msg, msg
    assert message in msg and "OverflowError" not in msg and "out of range integral" not in msg, msg


def test_an_action_on_a_kept_ctx_is_refused_not_lost(tmp_path):
    """A ctx kept from an earlier call is no longer read: its actions would vanish."""
    src = HALVE + '''
class Kept(Halve):
    def on_start(self, ctx):
        self.first = ctx
    def on_event(self, ev, ctx):
        if ev.kind == "ACK":
            self.first.set_rate(ctx.line_rate_bps // 2)
'''
    with pytest.raises(rdmalab.RunError) as e:
        rdmalab.run(scenario(tmp_path, src, "Kept", duration="300us"))
    assert "handling an ACK event raised ValueError: set_rate on the ctx of an earlier call" in str(e.value)


def test_ctrl_c_inside_a_controller_interrupts_the_run_not_fails_it(tmp_path):
    """Ctrl-C while a (slow) controller runs raises KeyboardInterrupt in its
    code: the run is interrupted, as between events, not failed."""
    src = HALVE + '''
class Interrupted(Halve):
    def on_event(self, ev, ctx):
        if ev.kind == "ACK":
            raise KeyboardInterrupt
'''
    with pytest.raises(KeyboardInterrupt):
        rdmalab.run(scenario(tmp_path, src, "Interrupted", duration="300us"), out_dir=tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["end"] == "interrupted" and "error" not in summary
    # The next run's error is its own, not a stale interrupt.
    with pytest.raises(rdmalab.RunError, match="returned 1 from on_event"):
        rdmalab.run(scenario(tmp_path, HALVE + "\nclass One(Halve):\n    def on_event(self, ev, ctx):\n"
                             "        return 1\n", "One", duration="300us"))


def test_a_float_rate_is_taken_rounded_to_whole_bits(tmp_path):
    """`ctx.set_rate(ctx.rate_bps * 0.5)` works, as the same in ints does."""
    results = []
    for expr in ("ctx.rate_bps * 0.5 + 0.4", "ctx.rate_bps // 2"):
        src = HALVE + f'''
class Half(Halve):
    def on_event(self, ev, ctx):
        if ev.kind == "CNP":
            ctx.set_rate(max(self.floor, {expr}))
'''
        results.append(rdmalab.run(scenario(tmp_path, src, "Half")).table("flows").to_dicts())
    assert results[0] == results[1]


@pytest.mark.parametrize("cls,params,message", [
    ("Missing", None, "has no class `Missing`"),
    ("Halve", {"colour": 1}, "do not fit `Halve`'s constructor"),
])
def test_bad_references_are_refused_before_the_run(tmp_path, cls, params, message):
    with pytest.raises(rdmalab.ScenarioError, match=message):
        scenario(tmp_path, HALVE, cls, params)


@pytest.mark.parametrize("body,message", [
    ("class Bad(Halve):\n    subscriptions = 5\n", "has subscriptions = 5; allowed: a list"),
    ("class Bad:\n    subscriptions = ['ACK']\n", "has no on_event"),
    ("class Bad(Halve):\n    def __init__(self):\n        raise RuntimeError('no init')\n",
     "constructing `mycc.py:Bad` with params {} raised RuntimeError: no init (at "),
])
def test_a_controller_class_that_cannot_work_is_refused_before_the_run(tmp_path, body, message):
    with pytest.raises(rdmalab.ScenarioError) as e:
        scenario(tmp_path, HALVE + body, "Bad")
    assert message in str(e.value)


def test_a_controller_exception_reaches_the_terminal_as_one_message(tmp_path):
    """No Rust panic line or backtrace before it, the traceback once."""
    import subprocess
    import sys

    (tmp_path / "mycc.py").write_text(HALVE + "class Broken(Halve):\n    def on_event(self, ev, ctx):\n"
                                      "        raise ZeroDivisionError('my bug')\n")
    (tmp_path / "s.yaml").write_text(
        "duration: 1ms\ntopology: {kind: single_switch, hosts: 2, host_link: {rate: 100Gbps}}\n"
        "cc: {algorithm: python, class: mycc.py:Broken}\nworkload: {flows: [{src: 0, dst: 1, size: 10KB}]}\n")
    r = subprocess.run([sys.executable, "-m", "rdmalab", "run", str(tmp_path / "s.yaml"), "--out",
                        str(tmp_path / "o"), "--quiet"], capture_output=True, text=True,
                       env={**__import__("os").environ, "RUST_BACKTRACE": "1"})
    assert r.returncode != 0
    assert "panicked" not in r.stderr and "stack backtrace" not in r.stderr, r.stderr
    assert r.stderr.count("Traceback") == 1 and r.stderr.count("my bug") == 2, r.stderr
    assert "handling an ACK event raised ZeroDivisionError: my bug" in r.stderr, r.stderr


def test_bad_subscriptions_are_refused(tmp_path):
    src = HALVE + '''
class Odd(Halve):
    subscriptions = ["PING"]
'''
    with pytest.raises(rdmalab.ScenarioError, match="subscriptions names `PING`"):
        rdmalab.run(scenario(tmp_path, src, "Odd"))


GRANTS = '''
from rdmalab import Controller
class Grants(Controller):
    subscriptions = ["RX", "PEER"]
    def __init__(self):
        self.seen = 0
        self.sent = False
    def on_event(self, ev, ctx):
        if ev.kind == "RX":
            assert ctx.at_receiver
            self.seen += ev.bytes
            if self.seen > 65536 and not self.sent:
                self.sent = True
                ctx.send_oob([20, 0, 0, 0])
        elif ev.kind == "PEER":
            ctx.set_rate(ev.words[0] * 1_000_000_000)
        elif ev.kind == "HINT":
            ctx.set_rate(int(ev.value * 1e9))
'''


def test_peer_messages_rx_events_and_hints_in_python(tmp_path):
    sc = scenario(tmp_path, GRANTS, "Grants", control={"placement": "swcc"})
    from rdmalab import _core

    sim = _core.Simulation(sc.to_json(), *sc.controller)
    sim.run_until(1_000_000_000)
    # Per QP: the receiver sends its grant, then the sender applies it.
    assert sim.summary()["control_actions_installed"] == 4
    sim.hint(0, "weight", 7.0)
    sim.run_until(2_000_000_000)
    sim.write_tables(str(tmp_path / "out"))
    import csv

    with open(tmp_path / "out" / "qp_samples.csv") as f:
        rows = list(csv.DictReader(f))
    last = {int(r["qp"]): int(r["dequeue_rate_bps"]) for r in rows}
    assert last[1] == 20_000_000_000, "the receiver's grant set the sender's rate"
    assert last[0] == 7_000_000_000, "the hint, sent later, set QP 0's rate"
    with pytest.raises(ValueError, match="hint `speed`"):
        sim.hint(0, "speed", 1.0)


def test_rx_subscriptions_are_refused_where_the_placement_lacks_them(tmp_path):
    with pytest.raises(rdmalab.ScenarioError, match="subscribes to RX events"):
        rdmalab.run(scenario(tmp_path, GRANTS, "Grants"))


PROBER = '''
from rdmalab import Controller
class Prober(Controller):
    subscriptions = ["RTT"]
    def __init__(self, log):
        self.log = log
    def on_start(self, ctx):
        ctx.request_probe(40000)
    def on_event(self, ev, ctx):
        with open(self.log, "a") as f:
            f.write(f"{ctx.now_ps} {ev.udp_sport} {ev.sent_ps} {ev.rtt_ps} {int(ev.lost)}\\n")
'''


def test_an_rtt_event_says_when_its_probe_left_even_on_slow_cores(tmp_path):
    log = tmp_path / "seen.txt"
    sc = scenario(tmp_path, PROBER, "Prober", {"log": str(log)}, control={"placement": "dpa"})
    rdmalab.run(sc, out_dir=tmp_path / "out")
    probes = pq.read_table(tmp_path / "out" / "probes.parquet").to_pylist()
    seen = [tuple(map(int, line.split())) for line in log.read_text().splitlines()]
    assert len(probes) == len(seen) == 2  # one probe per QP
    for (now, sport, sent, rtt, lost), row in zip(sorted(seen, key=lambda s: s[2] + s[3]), probes):
        assert not lost and sport == row["udp_sport"] == 40000
        assert sent + rtt == row["time_ps"], "sent + rtt is when the NIC saw the answer"
        assert now >= row["time_ps"] + 7_000_000, "the DPA delivered it later"


STAMP = '''
from rdmalab import Controller
class Stamp(Controller):
    subscriptions = ["TX", "ACK"]
    def __init__(self):
        self.pairs = []
    def on_event(self, ev, ctx):
        if ev.kind == "TX":
            ctx.set_cc_header_word(3, (ctx.now_ps // 1000) & 0xFFFFFFFF)
        elif ev.kind == "ACK":
            # Every ACK echoes the header (an empty one would make the check below vacuous).
            if len(ctx.cc_header) != 4:
                raise RuntimeError(f"16 B are 4 words, not {len(ctx.cc_header)}")
            echoed = ctx.cc_header[3]
            # The echoed TX stamp gives the RTT the NIC measured (both in whole ns).
            if abs((ctx.now_ps // 1000 - echoed) - ev.rtt_ps // 1000) > 1:
                raise RuntimeError(f"echoed stamp {echoed} ns is not this packet's")
'''


def test_a_python_controller_carries_its_own_header(tmp_path):
    sc = scenario(tmp_path, STAMP, "Stamp", control={"cc_header": "16B"})
    res = rdmalab.run(sc, out_dir=tmp_path / "out")
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    with pytest.raises(Exception, match="allowed: words 0 to 15"):
        bad = STAMP.replace("set_cc_header_word(3,", "set_cc_header_word(16,")
        rdmalab.run(scenario(tmp_path, bad, "Stamp", control={"cc_header": "16B"}), out_dir=tmp_path / "bad")


TENANT_RATE = '''
from rdmalab import Controller
class ByTenant(Controller):
    """Pin each QP's rate to its tenant: 10 Gb/s per tenant number + 10, 50 without one."""
    subscriptions = []
    def on_start(self, ctx):
        ctx.set_rate(50e9 if ctx.tenant is None else (ctx.tenant + 1) * 10e9)
'''


def test_the_context_names_the_qps_tenant(tmp_path):
    """`ctx.tenant` is shared by the QPs of one tenant, differs between
    tenants, and is None for a QP without one: a per-tenant defence can
    group by it (docs/controllers.md)."""
    def rates(**extra):
        out = tmp_path / f"out{len(extra)}"
        rdmalab.run(scenario(tmp_path, TENANT_RATE, "ByTenant", **extra), out_dir=out)
        rows = pq.read_table(out / "qp_samples.parquet").to_pylist()
        return {r["qp"]: r["dequeue_rate_bps"] for r in rows}

    assert set(rates().values()) == {50e9}
    workload = dict(BASE["workload"], tenants={"a": {"hosts": ["h0"]}, "b": {"hosts": ["h1"]}})
    by_qp = rates(workload=workload)
    assert sorted(by_qp.values()) == [10e9, 20e9], by_qp
