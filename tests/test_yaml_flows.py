"""The fast path for long `workload.flows` lists in YAML (issue 16): the
core's reader takes the list, PyYAML the rest, and nothing a user sees may
differ from PyYAML reading the whole file: the same values, the same
messages (a key given twice with both lines, a bad flow named by its index
and key), refused before the run starts. Each test also checks that the
fast path was taken, so a reader that quietly gives up fails here rather
than only making 100,000 flows slow again."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import rdmalab_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmalab import _core, scenario, yamlio
from rdmalab._core import ScenarioError
from rdmalab.outputs import indented_json
from rdmalab.runner import validate

HEAD = """\
name: many-flows
duration: 1ms
topology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps, delay: 1us}}
workload:
  flows:
"""
TAIL = "records: {sample_interval: off}\n"


def pyyaml(text: str):
    """What PyYAML alone makes of `text` (the loader before the fast path)."""
    return yaml.load(text, Loader=yamlio._StrictLoader)  # noqa: S506 (a SafeLoader subclass)


def outcome(load, text: str):
    try:
        return "ok", load(text)
    except Exception as e:  # noqa: BLE001 (whatever PyYAML raises, the fast path must raise too)
        return "error", f"{type(e).__name__}: {e}"


def flows_yaml(n: int, bad: dict[int, str] | None = None) -> str:
    """A scenario of `n` flows, one line each; `bad` replaces line i."""
    bad = bad or {}
    lines = [bad.get(i, f"  - {{src: h{i % 4}, dst: h{(i + 1) % 4}, size: {1 + i % 9}KB, start: {i % 7}us}}\n")
             for i in range(n)]
    return HEAD + "".join(lines) + TAIL


def write(tmp_path, text: str):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    return f


def test_a_long_list_is_read_by_the_core_and_equals_pyyamls():
    text = HEAD + "".join(
        f"  - {{src: h{i % 4}, dst: 'h{(i + 1) % 4}', size: {i + 1}KB, dport: {i}}}  # flow {i}\n"
        if i % 3 else f"  -   src: h{i % 4}\n      dst: \"h2\"\n\n      size: {i}.5\n      verb: read\n"
        for i in range(3000)) + TAIL
    data, read = yamlio.load_with_flows(text)
    assert read is not None and len(read) == 3000, "the fast path was not taken"
    assert data == pyyaml(text)
    assert json.dumps(data) == json.dumps(pyyaml(text))  # the same types too (1.5, not "1.5")


def test_a_bad_flow_deep_in_a_long_list_is_named_before_the_run(tmp_path):
    text = flows_yaml(20_000, {17_321: "  - {src: h1, dst: h9, size: 4KB}\n",
                               19_998: "  - {src: h1, dst: h2, size: 4parsecs}\n"})
    assert yamlio.load_with_flows(text)[1] is not None, "the fast path was not taken"
    r = rdmalab_cli("run", write(tmp_path, text), "--out", tmp_path / "out")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "workload.flows[17321].dst: `h9` — no such host" in r.stderr, r.stderr
    assert "workload.flows[19998].size: `4parsecs`" in r.stderr, r.stderr
    assert not (tmp_path / "out" / "flows.csv").exists(), "nothing ran"


def test_a_key_given_twice_deep_in_a_long_list_names_both_lines(tmp_path):
    entry = "  - {src: h1, dst: h2, size: 4KB, dst: h3}\n"
    text = flows_yaml(5_000, {4_321: entry})
    line = HEAD.count("\n") + 4_321 + 1
    with pytest.raises(ScenarioError) as e:
        scenario.load_scenario(write(tmp_path, text))
    assert f"key `dst` given twice (first on line {line})" in str(e.value)
    assert f"line {line}, column {entry.rindex('dst') + 1}" in str(e.value)
    assert outcome(yamlio.load, text) == outcome(pyyaml, text)


def test_a_key_given_twice_around_the_list_names_both_lines():
    flows = "".join(f"  - {{src: h0, dst: h1, size: {i}KB}}\n" for i in range(1, 500))
    twice_flows = HEAD + flows + "  flows: []\n" + TAIL
    assert "key `flows` given twice (first on line 5)" in outcome(yamlio.load, twice_flows)[1]
    twice_top = HEAD + flows + TAIL + "duration: 2ms\n"
    assert "key `duration` given twice (first on line 2)" in outcome(yamlio.load, twice_top)[1]
    for text in (twice_flows, twice_top):
        assert outcome(yamlio.load, text) == outcome(pyyaml, text)


def test_an_error_after_the_list_is_pyyamls_with_its_line():
    text = flows_yaml(800) + "seed: [1, 2\n"
    got = outcome(yamlio.load, text)
    assert got[0] == "error" and f"line {text.count(chr(10)) + 1}" in got[1], got
    assert got == outcome(pyyaml, text)


def test_a_non_finite_flow_value_is_named(tmp_path):
    text = flows_yaml(5_000, {4_321: "  - {src: h1, dst: h2, size: .nan}\n"})
    with pytest.raises(ScenarioError, match=r"workload\.flows\[4321\]\.size: `nan` — not a finite number"):
        scenario.load_scenario(write(tmp_path, text))


def test_read_flows_count_toward_the_value_budget(tmp_path, monkeypatch):
    """The budget (an alias bomb's guard) counts a read list's values as the
    walk would: the same scenario passes and fails at the same limit."""
    text = flows_yaml(300)
    f = write(tmp_path, text)
    assert yamlio.load_with_flows(text)[1] is not None, "the fast path was not taken"
    counted = [0]

    def count(v):
        counted[0] += 1
        for x in v.values() if isinstance(v, dict) else v if isinstance(v, list) else ():
            count(x)

    count(pyyaml(text))
    monkeypatch.setattr(scenario, "MAX_VALUES", counted[0])
    scenario.load_scenario(f)
    monkeypatch.setattr(scenario, "MAX_VALUES", counted[0] - 1)
    with pytest.raises(ScenarioError, match=f"more than {counted[0] - 1} values"):
        scenario.load_scenario(f)


def test_the_read_list_validates_and_serialises_as_pyyamls(tmp_path):
    text = flows_yaml(2_000)
    loaded = scenario.load_scenario(write(tmp_path, text))
    assert scenario.scenario_from_dict(pyyaml(text)).to_json() == loaded.to_json()
    assert validate(loaded)["flows"] == 2_000


def test_aliases_and_merge_keys_leave_it_to_pyyaml(tmp_path):
    """An alias shares the mapping holding the list, a merge key copies it:
    PyYAML must see the list itself, not the placeholder, and the scenario
    loader (which does not copy a read list) the same values."""
    flows = "".join(f"  - {{src: h0, dst: h1, size: {i}KB}}\n" for i in range(1, 50))
    anchored = HEAD.replace("workload:\n", "workload:\n  &w\n")
    for text in (anchored + flows + "copy: *w\n", anchored + flows + "copy: {<<: *w}\n",
                 HEAD.replace("workload:\n", "workload: &w\n") + flows + "copy: {<<: *w}\n",
                 HEAD + flows + "  <<: {poisson: {load: 0.1}}\n"):
        assert outcome(yamlio.load, text) == outcome(pyyaml, text)
        assert yamlio._FLOWS_HERE not in json.dumps(yamlio.load(text))
        loaded = scenario.load_scenario(write(tmp_path, text)).data
        assert loaded == scenario.scenario_from_dict(pyyaml(text)).data


def test_a_null_value_is_left_to_the_core():
    """Without a read list, a null (YAML `~`) is a value like any other."""
    s = scenario.scenario_from_dict({"duration": "1ms", "seed": None, "workload": {"flows": [{"src": None}]}})
    with pytest.raises(ScenarioError, match="topology"):
        validate(s)


# Scalars a flow list may hold: plain ones the reader types, and ones whose
# PyYAML type it must leave to PyYAML (bools, nulls, octal, hex, timestamps,
# exponents, anchors, tags, escapes, flow indicators). Mostly the former, so
# that many generated lists take the fast path whole.
PLAIN = ["h0", "h12", "write", "4KB", "1.5us", "100Gb/s", "0us", "0", "7", "-3", "+4", "1.25", "-0.0", "/x/y",
         "'h1'", '"h2"', "''", "0bytes", "_x", "a-b.c"]
TRICKY = ["yes", "No", "on", "OFF", "~", "null", "0xFF", "0x1F", "0b11", "017", "1e3", "1.0e+3", ".5", "1_000",
          "2026-01-01", "1:30", ".nan", "&a h0", "*a", "!!str 5", '"a\\tb"', "'it''s'", "a b", "a,b", "x#y",
          "[h0]", "{}", "", "1.", "99999999999999999999", "4KB # note"]
SCALARS = st.sampled_from(PLAIN * 4 + TRICKY)
KEYS = st.sampled_from(["src", "dst", "size", "start", "verb", "dport", "tenant"] * 3 + ["on", "'src'", "a b", "<<"])


@st.composite
def flow_lists(draw):
    """A scenario whose flow list mixes flow-style and block-style entries,
    indentations, comments, blank lines and troublesome scalars."""
    dash = draw(st.sampled_from(["  ", "    "]))
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        pairs = draw(st.lists(st.tuples(KEYS, SCALARS), max_size=4))
        if draw(st.booleans()):
            sep = draw(st.sampled_from([", ", ",", " , "]))
            body = sep.join(f"{k}: {v}" for k, v in pairs)
            lines.append(f"{dash}- {{{body}}}" + draw(st.sampled_from(["", "  # c", "", "#c"])))
        elif pairs:
            pad = draw(st.sampled_from([" ", "   "]))
            col = " " * (len(dash) + 1 + len(pad))
            lines.append(f"{dash}-{pad}{pairs[0][0]}: {pairs[0][1]}")
            lines += [f"{col}{k}: {v}" for k, v in pairs[1:]]
        else:
            lines.append(f"{dash}-")
        if draw(st.integers(0, 3)) == 0:
            lines.append(draw(st.sampled_from(["", "# between", "      # deeper", "\t"])))
    after = draw(st.sampled_from(["", "  poisson: {load: 0.1}\n", "seed: 2\n", "", "  flows: []\n", "x: [\n"]))
    return HEAD + "\n".join(lines) + "\n" + after


@given(flow_lists())
@settings(max_examples=500, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_the_fast_path_reads_every_list_as_pyyaml_does(text):
    assert outcome(yamlio.load, text) == outcome(pyyaml, text)


def test_the_property_above_reaches_the_fast_path():
    """The generated lists above are not all left to PyYAML."""
    text = HEAD + "  - {src: h0, dst: h1,size: 4KB}  # c\n  -   src: h0\n      dport: -3\n# between\n" + TAIL
    assert yamlio.load_with_flows(text)[1] is not None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30)


@given(json_values)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_indented_json_is_json_dumps_indent_2(value):
    assert indented_json(value) == json.dumps(value, indent=2, sort_keys=True)


def test_indented_json_of_a_read_scenario(tmp_path):
    data = scenario.load_scenario(write(tmp_path, flows_yaml(1_000))).data
    assert indented_json(data) == json.dumps(data, indent=2, sort_keys=True)
    assert _core.indent_json("[]") == "[]"
