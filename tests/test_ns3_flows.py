"""The ns-3 flow file (`flow.txt`) read by the core: nothing a user sees may
differ from the Python reference (`parse_flows`, `seconds_to_ns`) — the same
flows, start times to the ns, messages with their lines in the same order,
the same warnings and scenario. Each test also checks which reader ran, so a
core reader that quietly gives up fails here rather than only making
100,000 flows slow again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmalab import _core
from rdmalab._core import ScenarioError
from rdmalab.hpcc import convert
from rdmalab.hpcc.config import ReferenceFlows, Topology, parse_flows, read_flows, unread_flow_lines
from rdmalab.hpcc.units import seconds_to_ns

ROOT = Path(__file__).resolve().parent.parent
WHERE = "FLOW_FILE `f`"
# Nodes 0..5; node 4 is a switch.
TOPO = Topology(nodes=6, switches={4}, links=[], text="", verbatim_ok=True)


def python_ns(text: str) -> int | None:
    try:
        return seconds_to_ns(text)
    except ValueError:
        return None


# ---------------------------------------------------------------- seconds_to_ns


def _digits(min_size: int = 1) -> st.SearchStrategy[str]:
    """Digits, sometimes with the single underscores Python allows between them."""
    plain = st.text("0123456789", min_size=min_size, max_size=25)
    return st.one_of(plain, plain, st.lists(st.text("0123456789", min_size=1, max_size=4), min_size=1,
                                            max_size=4).map("_".join))


decimals = st.builds(
    lambda sign, whole, dot, frac, exp: sign + whole + dot + frac + exp,
    st.sampled_from(["", "", "+", "-"]),
    st.one_of(st.just(""), _digits()),
    st.sampled_from([".", ".", ""]),
    st.one_of(st.just(""), _digits()),
    st.one_of(st.just(""), st.builds(lambda e, s, d: e + s + d, st.sampled_from("eE"),
                                     st.sampled_from(["", "+", "-"]), _digits())),
)
# Doubles written as Python writes them (repr, and with many digits): round trips, halfway cases near 2^33.
written = st.floats(min_value=0, max_value=2.0**33 + 1, allow_nan=False).flatmap(
    lambda x: st.sampled_from([repr(x), f"{x:.30f}", f"{x:.17e}", f"{x:.3f}", f"{x:.9f}", f"{x:.0f}"]))
ascii_text = st.text(st.sampled_from("0123456789.+-_eEinfatyINFATY xX\t\n\r\x0b\x0c\x1c\x1f\x00"), max_size=12)


@given(st.one_of(decimals, written, ascii_text,
                 st.sampled_from(["8589934592", "8589934591.9999999999", "8589934591.99999999999", "-0", "-0.0e9",
                                  "1e-400", "-1e-400", "4.9e-324", "2.000002612", "2.0002", "1" * 400, "0." + "0" * 350 + "1",
                                  "1e99999999999999999999", "0e99999999999999999999"])))
@settings(max_examples=3000, deadline=None, derandomize=True)
def test_the_cores_seconds_equal_pythons_to_the_ns(text):
    assert _core.ns3_seconds_to_ns(text) == python_ns(text), repr(text)


def test_seconds_refuse_what_python_refuses():
    # Each of these guards a line of the core's reader (a mutation there made one of them pass).
    for text in ["", ".", "e5", "1e", "1__0", "_1", "1_", "1_.5", "1._5", "1e_5", "inf", "nan", "-1", "8589934592",
                 "1e400", "0x1", "1\x1c"]:
        assert _core.ns3_seconds_to_ns(text) is None and python_ns(text) is None, text
    assert _core.ns3_seconds_to_ns("2.0002") == python_ns("2.0002") == 2000199999
    assert _core.ns3_seconds_to_ns("1_0.0_1e-1_0") == python_ns("1_0.0_1e-1_0") == 1
    with pytest.raises(ValueError, match="ASCII"):
        _core.ns3_seconds_to_ns("\u0661")


# ---------------------------------------------------------------- the flow file


def both(text: str):
    """(core, reference): each reader's problems and flows, with what the converter asks of them."""
    out = []
    for reader in ("core", "reference"):
        problems: list[str] = []
        if reader == "core":
            flows = _core.read_ns3_flows(text, WHERE, TOPO.nodes, sorted(TOPO.switches))
            assert flows is not None, f"the core gave up on {text!r}"
            problems.extend(flows.problems)
        else:
            flows = ReferenceFlows(parse_flows(text, WHERE, TOPO, problems))
        seen = [problems, len(flows), flows.first_pg(), flows.first_other_pg(), flows.sorted_by_start(),
                flows.scenario_flows()]
        for stop_ns in (2_000_000_001, 0):
            seen.append(flows.drop_late(stop_ns))
            seen.append(flows.scenario_flows())
        out.append(seen)
    return out


SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\t", "\x1f", " \x1d "])
BREAKS = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1e", "\n\n", "\n \t\n"])
INTS = st.one_of(st.integers(-2, 9).map(str), st.sampled_from(["3", "100", "65535", "65536", "8", "0", "-0", "+3", "007",
                                                               "1_0", "1__0", "_1", "x", "1e3", "1.0",
                                                               "9223372036854775807", "-9223372036854775808"]))
STARTS = st.one_of(st.sampled_from(["2", "2.0", "2.000000001", "2.0002", "1e0", "inf", "nan", "-1", "x", "2_0",
                                    "8589934592", "3"]), decimals)


@st.composite
def flow_files(draw):
    n = draw(st.integers(0, 8))
    lines = []
    for _ in range(n):
        toks = [draw(INTS) for _ in range(5)] + [draw(STARTS)]
        if draw(st.integers(0, 9)) == 0:  # a token more or fewer
            toks = toks[:-1] if draw(st.booleans()) else toks + ["7"]
        line = draw(SEPARATORS).join(toks)
        lines.append(draw(st.sampled_from(["", "", " ", "\t"])) + line)
    count = draw(st.one_of(st.just(str(n)), st.integers(-1, n + 2).map(str), st.sampled_from(["x", "1 2", "0_2"])))
    text = draw(st.sampled_from(["", "\n", " \n"])) + count
    for line in lines:
        text += draw(BREAKS) + line
    return text + draw(st.sampled_from(["", "\n", "\r\n", "\n\n"]))


@given(flow_files())
@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_the_cores_reader_equals_the_reference(text):
    core, reference = both(text)
    assert core == reference, repr(text)


@given(flow_files())
@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_the_cores_reader_counts_the_unread_lines_as_the_reference(text):
    """The lines past the count, from the reader's own pass, wherever the
    file converts (a file with a problem is refused, so nothing is warned)."""
    flows = _core.read_ns3_flows(text, WHERE, TOPO.nodes, sorted(TOPO.switches))
    if not flows.problems:
        assert flows.unread_lines() == unread_flow_lines(text), repr(text)


def test_a_good_file_is_read_by_the_core():
    text = "2\n0 1 3 100 1000 2.000002612\n1 2 3 200 5 2.0002\n"
    problems: list[str] = []
    flows = read_flows(text, WHERE, TOPO, problems)
    assert isinstance(flows, _core.Ns3Flows) and problems == []
    assert flows.scenario_flows() == [
        {"src": "h0", "dst": "h1", "size": "1000B", "start": "2000002611ns"},
        {"src": "h1", "dst": "h2", "size": "5B", "start": "2000199999ns", "dport": 200},
    ]
    assert [list(f) for f in flows.scenario_flows()] == [["src", "dst", "size", "start"],
                                                        ["src", "dst", "size", "start", "dport"]]


def test_each_bad_line_is_named_in_file_order():
    text = "\n7\n0 1 3 100 1000\n4 9 3 100 1 2\n1 1 3 100 1 2\n0 1 8 100 1 2\n0 1 3 100 1 nan\n\n0 2 3 100 1 2\n"
    core, reference = both(text)
    assert core == reference
    assert core[0] == [
        f"{WHERE}: the first line says 7 flows but only 6 follow (ns-3 reads exactly that many)",
        f"{WHERE} line 3 `0 1 3 100 1000`: must be `src dst pg dport size start_time_s`",
        f"{WHERE} line 4 `4 9 3 100 1 2`: src 4 is not a host of the topology (ns-3 asserts it)",
        f"{WHERE} line 4 `4 9 3 100 1 2`: dst 9 is not a host of the topology (ns-3 asserts it)",
        f"{WHERE} line 5 `1 1 3 100 1 2`: src and dst are the same host",
        f"{WHERE} line 6 `0 1 8 100 1 2`: dport must be 0-65535, size ≥ 0 and pg 0-7",
        f"{WHERE} line 7 `0 1 3 100 1 nan`: src, dst, pg, dport and size must be integers and the start a number "
        f"of seconds",
    ]
    assert core[1] == 1  # line 9's flow


@pytest.mark.parametrize("text", [
    "1\n\u0661 2 3 100 1 2\n",  # Python's int reads Arabic-Indic digits
    "2\n0\u00a01 3 100 1 2\u20281 2 3 100 1 2\n",  # and splits at other spaces and line ends
    "1\n0 1 3 100 99999999999999999999 2\n",  # beyond 64 bits
    "1\n0 1 3 100 " + "0" * 5000 + "1 2\n",  # past Python's limit on digits
])
def test_what_the_core_gives_up_on_the_reference_reads(text):
    assert _core.read_ns3_flows(text, WHERE, TOPO.nodes, sorted(TOPO.switches)) is None
    problems: list[str] = []
    flows = read_flows(text, WHERE, TOPO, problems)
    reference: list[str] = []
    assert isinstance(flows, ReferenceFlows)
    assert flows.flows == parse_flows(text, WHERE, TOPO, reference) and problems == reference


# ---------------------------------------------------------------- the converter's checks on the flows

FLOWS = "6\n0 1 3 100 1000 2.5\n1 2 3 100 1000 2.0\n2 3 3 100 1000 2.09\n3 0 3 7 1000 2.09\n0 2 3 100 1 2.0000001\n" \
        "1 0 3 100 1 2.05\n"
LATE = "2\n0 1 3 100 1 2.1\n1 0 3 100 1 3\n"
PGS = "3\n0 1 3 100 1 2.0\n1 0 4 100 1 2.0\n1 2 5 100 1 2.0\n"
PG0 = "2\n0 1 0 100 1 2.0\n1 0 0 100 1 2.0\n"


def converted(tmp_path: Path, flows: str, name: str):
    d = tmp_path / name
    shutil.copytree(ROOT / "examples" / "hpcc" / "mix", d)
    (d / "flow.txt").write_text(flows, newline="")
    (d / "config.txt").write_text((d / "config-dcqcn.txt").read_text().replace("mix/", ""))
    try:
        conv = convert(d / "config.txt", cwd=d)
    except ScenarioError as e:
        return str(e).replace(str(d), "D")
    return [w.replace(str(d), "D") for w in conv.warnings], conv.scenario["workload"]["flows"]


@pytest.mark.parametrize("flows", [
    FLOWS,
    FLOWS.replace("1 2 3 100 1000 2.0", "1 2 4 100 1000 2.0"),  # two pgs
    PGS,  # three
    PG0,  # pg 0 everywhere
    LATE,  # every flow late, one at the stop time itself
    "3\n0 1 3 100 1 2\n0 0 3 100 1 2\n9 1 3 100 1 2\n",  # bad lines
    "0\n",
])
def test_the_converter_asks_the_core_what_it_asked_the_dicts(tmp_path, flows):
    # A blank line of a non-ASCII space at the end makes the core give up and the reference read the file.
    core = converted(tmp_path, flows, "core")
    reference = converted(tmp_path, flows + "\u00a0\n", "reference")
    assert core == reference


def test_late_and_unsorted_flows_warn_with_their_lines(tmp_path):
    warnings, flows = converted(tmp_path, FLOWS, "w")
    assert "FLOW_FILE: 1 flows start at or after SIMULATOR_STOP_TIME (first on line 2); they never start, in ns-3 " \
           "or rdmalab" in warnings
    assert "FLOW_FILE: not sorted by start time; ns-3 requires that (it schedules flows in file order), rdmalab " \
           "starts each at its own time" in warnings
    # ns-3's truncation: 2.09 is a hair below in binary.
    assert [f["start"] for f in flows] == ["2s", "2089999999ns", "2089999999ns", "2000000099ns", "2049999999ns"]
    assert flows[2] == {"src": "h3", "dst": "h0", "size": "1000B", "start": "2089999999ns", "dport": 7}
    sorted_flows = "2\n0 1 3 100 1000 2.0\n1 2 3 100 1000 2.0\n"
    assert not any("not sorted" in w for w in converted(tmp_path, sorted_flows, "s")[0])
    assert converted(tmp_path, FLOWS.replace("1 2 3 100 1000 2.0", "1 2 4 100 1000 2.0"), "pg").endswith(
        "FLOW_FILE line 3: pg 4 differs from line 2's pg 3; rdmalab puts all data in one class (nic.data_class), "
        "so every flow must use the same pg")
    assert converted(tmp_path, PGS, "pgs").endswith("FLOW_FILE line 3: pg 4 differs from line 2's pg 3; rdmalab puts "
                                                    "all data in one class (nic.data_class), so every flow must use "
                                                    "the same pg")
    assert converted(tmp_path, PG0, "pg0").endswith(
        "FLOW_FILE line 2: pg 0 is the control class (strict priority, never paused); data must use pg 1-7 "
        "(traffic_gen.py writes 3)")
    assert "FLOW_FILE: no flows to run" in converted(tmp_path, LATE, "late")[0]


def test_lines_after_the_counted_flows_are_warned_of(tmp_path):
    """ns-3 reads exactly as many flows as the first line says; rdmalab too,
    but it says so when more lines follow."""
    two_of_three = "2\n0 1 3 100 1000 2.0\n1 2 3 100 1000 2.0\n\n2 1 3 100 1000 2.0\n"
    warnings, flows = converted(tmp_path, two_of_three, "more")
    assert len(flows) == 2
    assert any("1 line after the 2 flows its first line counts (first on line 5) are not read; ns-3 reads "
               "exactly that many, and so does rdmalab" in w for w in warnings), warnings
    warnings, _ = converted(tmp_path, "2\n0 1 3 100 1000 2.0\n1 2 3 100 1000 2.0\n\n", "exact")
    assert not any("not read" in w for w in warnings), warnings


# ---------------------------------------------------------------- loading a conversion without copying its flows


def test_a_conversion_loads_as_scenario_from_dict_but_hands_its_flows_over(tmp_path):
    """`Conversion.load` gives what `scenario_from_dict` gives. The flows
    the core's reader made go over uncopied; flows someone changed to values
    JSON does not hold as they are (a NumPy integer, a bool) are copied and
    converted, as `scenario_from_dict` converts them."""
    import numpy as np

    from rdmalab.scenario import scenario_from_dict

    d = tmp_path / "mix"
    shutil.copytree(ROOT / "examples" / "hpcc" / "mix", d)
    (d / "flow.txt").write_text(FLOWS, newline="")
    (d / "config.txt").write_text((d / "config-dcqcn.txt").read_text().replace("mix/", ""))
    conv = convert(d / "config.txt", cwd=d)
    made = conv.scenario["workload"]["flows"]
    assert conv.made_flows is made and len(made) == 5

    loaded = conv.load(d, "config.txt")
    assert loaded.data["workload"]["flows"] is made
    assert loaded.to_json() == scenario_from_dict(conv.scenario, d, "config.txt").to_json()

    made[1]["size"] = np.int64(7)
    copied = conv.load(d, "config.txt")
    assert copied.data["workload"]["flows"] is not made
    assert copied.data["workload"]["flows"][1]["size"] == 7 and type(copied.data["workload"]["flows"][1]["size"]) is int
    assert copied.to_json() == scenario_from_dict(conv.scenario, d, "config.txt").to_json()

    # An integer beyond 64 bits is no plain flow: the loader's walk names it.
    made[1]["size"] = 2**70
    with pytest.raises(ScenarioError, match=r"workload\.flows\[1\]\.size: `1180591620717411303424` — beyond 64 bits"):
        conv.load(d, "config.txt")
    made[1]["size"] = 7

    # A list put in its place is the caller's: copied, whatever it holds.
    conv.scenario["workload"]["flows"] = [dict(made[0]), dict(made[2])]
    assert conv.load(d, "config.txt").data["workload"]["flows"] is not conv.scenario["workload"]["flows"]


class _Text(str):
    pass


@pytest.mark.parametrize("flows, plain", [
    ([], True),
    ([{"src": "h1", "size": 5}], True),
    ([{"size": 2**64 - 1, "start": -2**63}], True),
    ([{"size": 2**64}], False),  # beyond 64 bits: the loader's walk must name it
    ([{"start": -2**63 - 1}], False),
    ([{"src": _Text("h1")}], False),
    ([{"src": "h1", "dport": True}], False),  # a bool
    ([{"src": "h1", "size": 5.0}], False),
    ([{"src": "h1", "at": None}], False),
    ([{"src": ["h1"]}], False),
    ([{1: "h1"}], False),
    ([("src", "h1")], False),
    (({"src": "h1"},), False),  # a tuple of flows
])
def test_plain_flows_are_dicts_of_text_and_whole_numbers(flows, plain):
    assert _core.plain_flows(flows) is plain
