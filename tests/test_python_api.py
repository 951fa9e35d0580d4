"""The Python API: `rdmalab.run` takes a path, a mapping or a loaded
scenario with dotted overrides and returns its tables in memory, typed as
the files it writes; the example notebook runs cell by cell."""

import json

import numpy as np
import polars as pl
import pytest

import rdmalab


def test_run_from_a_path_with_overrides_keeps_tables_in_memory(examples):
    r = rdmalab.run(examples / "dumbbell-dcqcn.yaml", **{"cc.algorithm": "timely", "duration": "1ms"})
    assert r.out_dir is None and r.paths == {}
    assert r.summary["flows_completed"] > 0
    flows = r.table("flows")
    assert isinstance(flows, pl.DataFrame) and flows.height == r.summary["flows_completed"]
    assert flows.schema["size_bytes"] == pl.UInt64 and flows.schema["piece"] == pl.Boolean
    assert r.flows is flows  # attribute access, cached
    assert set(r.tables) >= {"flows", "qp_samples", "port_samples", "pfc_events", "apps"}
    # The override took effect: DCQCN, the file's own algorithm, finishes differently.
    dcqcn = rdmalab.run(examples / "dumbbell-dcqcn.yaml", **{"duration": "1ms"})
    assert not dcqcn.flows.equals(flows)


def test_tables_in_memory_equal_the_files_written(examples, tmp_path):
    r = rdmalab.run(examples / "dumbbell-dcqcn.yaml", out_dir=tmp_path / "o", **{"duration": "1ms"})
    assert "flows.parquet" in r.paths and "summary.json" in r.paths
    for name in ("flows", "qp_samples", "port_samples"):
        assert r.table(name).equals(pl.read_parquet(tmp_path / "o" / f"{name}.parquet")), name


def test_a_mapping_and_a_loaded_scenario_run_alike(examples):
    s = rdmalab.load_scenario(examples / "dumbbell-dcqcn.yaml")
    before = json.dumps(s.data, sort_keys=True)
    a = rdmalab.run(s, duration="1ms")
    b = rdmalab.run(dict(s.data, duration="1ms"))
    assert a.flows.equals(b.flows) and a.flows.height > 0
    assert json.dumps(s.data, sort_keys=True) == before, "overrides leave the loaded scenario alone"


def test_bad_overrides_and_tables_are_named(examples):
    with pytest.raises(rdmalab.ScenarioError, match="not a scenario key"):
        rdmalab.run(examples / "dumbbell-dcqcn.yaml", **{"cc..algorithm": "x"})
    with pytest.raises(rdmalab.ScenarioError, match="cc.algorithm"):
        rdmalab.run(examples / "dumbbell-dcqcn.yaml", **{"cc.algorithm": "nope"})
    r = rdmalab.run(examples / "dumbbell-dcqcn.yaml", duration="100us")
    with pytest.raises(ValueError, match="no table `nope`; allowed: flows"):
        r.table("nope")


@pytest.mark.parametrize("argument,message", [
    ({"threads": -1}, "threads: `-1` — allowed: a whole number, 1 (serial) or more"),
    ({"threads": "2"}, "threads: `'2'` — allowed: a whole number"),
    ({"threads": True}, "threads: `True` — allowed: a whole number"),
    ({"parquet": "no"}, "parquet: `'no'` — allowed: True or False"),
    ({"progress": None}, "progress: `None` — allowed: True or False"),
    ({"out_dir": 123}, "out_dir: `123` — allowed: a directory path (str or os.PathLike), or None"),
])
def test_run_refuses_its_own_arguments_naming_them(examples, argument, message):
    with pytest.raises(rdmalab.ScenarioError) as e:
        rdmalab.run(examples / "dumbbell-dcqcn.yaml", duration="100us", **argument)
    assert message in str(e.value)


def test_an_out_dir_that_cannot_be_one_is_refused_as_out_dir_not_as_the_clis_out(examples, tmp_path):
    """The API's caller wrote `out_dir`; `--out` is the command line's word
    (tests/test_input_checks.py holds that the command line still says it)."""
    from rdmalab.outputs import OutputDirError

    f = tmp_path / "afile"
    f.write_text("")
    for out, what in ((f, "is a file; give a directory"), (f / "sub", "cannot be written (Not a directory)")):
        with pytest.raises(OutputDirError) as e:
            rdmalab.run(examples / "dumbbell-dcqcn.yaml", out_dir=out)  # refused before the run
        assert str(e.value).startswith(f"out_dir: `{out}` {what}"), str(e.value)
        assert "--out" not in str(e.value)


def test_validate_takes_what_run_takes(examples):
    path = examples / "dumbbell-dcqcn.yaml"
    for scenario in (path, str(path), rdmalab.load_scenario(path), rdmalab.load_scenario(path).data):
        assert rdmalab.validate(scenario)["hosts"] == 8
    with pytest.raises(rdmalab.ScenarioError, match="cc.algorithm: `nope`"):
        rdmalab.validate(dict(rdmalab.load_scenario(path).data, cc={"algorithm": "nope"}))
    with pytest.raises(rdmalab.ScenarioError, match="expected a scenario file path, a mapping"):
        rdmalab.validate(None)


def test_the_example_notebook_runs_cell_by_cell(root, monkeypatch):
    # Executed in this process, cell after cell, as a kernel would.
    monkeypatch.chdir(root)
    nb = json.loads((root / "examples" / "python-api.ipynb").read_text())
    ns: dict = {}
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 4
    for cell in code:
        exec(compile("".join(cell["source"]), "python-api.ipynb", "exec"), ns)
    assert set(ns["table"]["algorithm"]) == {"dcqcn", "timely", "hpcc"}
    assert ns["table"]["flows"].min() > 0


def test_an_interrupted_run_keeps_exactly_what_it_finished(examples, tmp_path, monkeypatch):
    from rdmalab import runner

    full = rdmalab.run(examples / "dumbbell-dcqcn.yaml")
    half = full.summary["sim_time_ps"] // 2
    real = runner._Progress.update

    def ctrl_c_at_half(self, sim, done=False):
        real(self, sim, done)
        if sim.now_ps >= half:
            raise KeyboardInterrupt

    monkeypatch.setattr(runner._Progress, "update", ctrl_c_at_half)
    with pytest.raises(KeyboardInterrupt) as e:
        rdmalab.run(examples / "dumbbell-dcqcn.yaml", out_dir=tmp_path / "o")
    out, summary = e.value.rdmalab_saved
    assert json.loads((out / "summary.json").read_text())["end"] == "interrupted"
    stopped = summary["sim_time_ps"]
    assert half <= stopped < full.summary["sim_time_ps"]
    kept = pl.read_parquet(out / "flows.parquet")
    expected = full.flows.filter(pl.col("finish_ps") <= stopped)
    assert 0 < kept.height < full.flows.height
    assert kept.equals(expected), "exactly the flows finished by the interruption, as the full run has them"
    samples = pl.read_parquet(out / "qp_samples.parquet")
    assert samples["time_ps"].max() <= stopped


def test_a_failed_runs_files_are_the_same_every_time(examples, tmp_path):
    """summary.json holds no wall-clock figures, a failed run's neither."""
    for out in ("a", "b"):
        with pytest.raises(rdmalab.RunError) as e:
            rdmalab.run(examples / "dumbbell-dcqcn.yaml", out_dir=tmp_path / out, duration="1ms", max_events=2000)
        assert e.value.rdmalab_saved[1]["wall_seconds"] > 0, "the exception still tells the wall time"
    a, b = ((tmp_path / out / "summary.json").read_text() for out in ("a", "b"))
    assert json.loads(a)["end"] == "failed" and "wall_seconds" not in json.loads(a)
    assert a == b


def test_fct_txt_grows_as_flows_finish(examples, tmp_path, monkeypatch):
    """ns-3 users watch fct.txt grow: after every step it holds one line per
    flow finished so far, the first lines of the file the run ends with."""
    from rdmalab import runner

    out = tmp_path / "o"
    seen = []
    real = runner._Progress.update

    def look(self, sim, done=False):
        real(self, sim, done)
        seen.append((sim.flows_done, (out / "fct.txt").read_text()))

    monkeypatch.setattr(runner._Progress, "update", look)
    rdmalab.run(examples / "dumbbell-dcqcn.yaml", out_dir=out)
    final = (out / "fct.txt").read_text()
    assert len({n for n, _ in seen}) > 3, "flows finish over several steps"
    for n, text in seen:
        assert text.count("\n") == n and final.startswith(text), (n, text)


def test_load_scenario_takes_dotted_overrides_as_run_does(examples):
    """`cc.algorithm` used to be set as one top-level key of that name, and
    refused as unknown only when the scenario was validated or run."""
    s = rdmalab.load_scenario(examples / "dumbbell-dcqcn.yaml",
                              overrides={"cc.algorithm": "timely", "seed": 5, "workload.perftest[0].message_size": "8KB"})
    assert s.data["cc"]["algorithm"] == "timely" and "cc.algorithm" not in s.data
    assert s.data["seed"] == 5 and s.data["workload"]["perftest"][0]["message_size"] == "8KB"
    rdmalab.validate(s)
    with pytest.raises(rdmalab.ScenarioError, match="override"):
        rdmalab.load_scenario(examples / "dumbbell-dcqcn.yaml", overrides={"workload.perftest[99].message_size": "8KB"})


def _one_flow(size: str) -> dict:
    """One flow over a dumbbell for 300 us, no samples: no sample event puts
    the clock on the stop time, and the last event falls short of it."""
    return {"name": "one-flow", "seed": 1, "duration": "300us",
            "topology": {"kind": "dumbbell", "left_hosts": 1, "right_hosts": 1,
                         "host_link": {"rate": "100Gbps", "delay": "1us"},
                         "bottleneck_link": {"rate": "100Gbps", "delay": "1us"}},
            "workload": {"flows": [{"src": "h0", "dst": "h1", "size": size}]},
            "records": {"sample_interval": "off"}}


@pytest.mark.parametrize("threads", [1, 2])
def test_a_run_that_reaches_its_stop_time_simulated_up_to_it(tmp_path, threads):
    # 10 MB take ~800 us at 100 Gb/s: the run reaches its stop time; its
    # last event (a packet's) was a few ns before it.
    r = rdmalab.run(_one_flow("10MB"), out_dir=tmp_path / "o", threads=threads)
    written = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert written["end"] == "stop_time"
    assert written["sim_time_ps"] == r.summary["sim_time_ps"] == 300_000_000


@pytest.mark.parametrize("threads", [1, 2])
def test_a_run_that_ends_on_its_last_flow_ends_at_that_flows_end(threads):
    r = rdmalab.run(_one_flow("1MB"), threads=threads)
    assert r.summary["end"] == "all_flows_done"
    assert r.summary["sim_time_ps"] == r.flows["finish_ps"].max() < 300_000_000


# ------------------------------------------------------------------ NumPy integers

class _Index:
    """An integer type rdmalab knows nothing of, as NumPy's are to it: not an
    int (NumPy's integer scalars are not), but an integer through `__index__`."""

    def __init__(self, value: int):
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"_Index({self.value})"


# NumPy comes with matplotlib, a dependency of rdmalab; `_Index` holds the
# same without it.
INTEGER_TYPES = [np.int64, np.int32, np.uint8, np.uint64, _Index]


@pytest.mark.parametrize("integer", INTEGER_TYPES, ids=lambda t: t.__name__)
def test_numpy_integers_are_taken_wherever_ints_are(integer):
    # numpy.float64 was taken (a float subclass); numpy.int64 is no int subclass and was refused.
    with_ints = _one_flow("1MB")
    data = _one_flow("1MB")
    data["seed"] = integer(1)
    data["topology"]["left_hosts"] = integer(1)
    data["workload"]["flows"][0]["dst"] = integer(1)  # a host by index
    with_ints["workload"]["flows"][0]["dst"] = 1
    assert rdmalab.scenario_from_dict(data).to_json() == rdmalab.scenario_from_dict(with_ints).to_json()
    # As overrides and as run's own `threads`: the run is the one with ints.
    r = rdmalab.run(data, threads=integer(2), seed=integer(7))
    assert r.flows.equals(rdmalab.run(with_ints, threads=2, seed=7).flows)


def test_a_numpy_integer_set_into_a_flow_list_read_from_yaml_is_an_int(examples):
    # The list yamlio reads is used as it is, not copied: an override put an
    # int64 in it, and the scenario's JSON failed with a TypeError.
    s = rdmalab.load_scenario(examples / "lossy-link.yaml", {"workload.flows[0].dst": np.int64(1)})
    assert json.loads(s.to_json())["workload"]["flows"][0]["dst"] == 1


def test_booleans_stay_refused_where_an_integer_is_asked_for():
    for b in (True, np.True_):
        with pytest.raises(rdmalab.ScenarioError, match="seed: `(true|np.True_)`"):
            rdmalab.run(_one_flow("1MB"), seed=b)
        with pytest.raises(rdmalab.ScenarioError, match="threads: `(True|np.True_)` — allowed: a whole number"):
            rdmalab.run(_one_flow("1MB"), threads=b)
    # An integer past 64 bits is named as the value it stands for.
    with pytest.raises(rdmalab.ScenarioError, match="seed: `18446744073709551616` — beyond 64 bits"):
        rdmalab.run(_one_flow("1MB"), seed=_Index(2**64))


@pytest.mark.parametrize("integer", [np.int64, _Index], ids=lambda t: t.__name__)
def test_a_sweep_built_with_numpy_integers_is_the_sweep_built_with_ints(integer):
    from rdmalab.sweep.spec import sweep_from_dict

    def spec(i):
        base = _one_flow("1MB")
        base["seed"] = i(1)
        return {"base": base, "grid": {"topology.right_hosts": [i(1), i(2)]}, "seeds": [i(1), i(2)],
                "set": {"topology.left_hosts": i(1)}}

    ints, other = sweep_from_dict(spec(int)), sweep_from_dict(spec(integer))
    assert [(r.run_id, r.params) for r in other.runs] == [(r.run_id, r.params) for r in ints.runs]
    assert all(type(v) is int for r in other.runs for v in r.params.values())
    assert json.dumps(other.spec) == json.dumps(ints.spec)  # the sweep file as written


def test_numpy_booleans_and_floats_are_taken_as_pythons(examples):
    # numpy.bool_ and numpy.float32 are no bool or float subclass: they were
    # refused as "a bool; allowed: ... true/false" and "a float32; allowed: a number".
    def scenario(pfc, g):
        data = _one_flow("1MB")
        data["switch"] = {"pfc": {"enabled": pfc}}
        data["cc"] = {"algorithm": "dcqcn", "params": {"g": g}}
        return data

    pythons = rdmalab.scenario_from_dict(scenario(False, 0.25)).to_json()
    for pfc, g in [(np.False_, np.float32(0.25)), (np.bool_(False), np.float16(0.25))]:
        assert rdmalab.scenario_from_dict(scenario(pfc, g)).to_json() == pythons
    assert rdmalab.run(scenario(np.True_, np.float32(0.5))).flows.equals(rdmalab.run(scenario(True, 0.5)).flows)
    # The value is the scalar's own: float32's 0.1 is not 0.1.
    g = json.loads(rdmalab.scenario_from_dict(scenario(False, np.float32(0.1))).to_json())["cc"]["params"]["g"]
    assert g == float(np.float32(0.1)) != 0.1
    for bad in (np.float32("nan"), np.float64("inf"), np.float16("-inf")):
        with pytest.raises(rdmalab.ScenarioError, match=r"cc.params.g: `.*` — not a finite number"):
            rdmalab.scenario_from_dict(scenario(False, bad))
    with pytest.raises(rdmalab.ScenarioError, match=r"cc.params.g: `np.complex64\(.*\)` is a complex64; allowed"):
        rdmalab.scenario_from_dict(scenario(False, np.complex64(1)))
    # As overrides, and in a sweep: the runs of the sweep built with Python's.
    dumbbell = examples / "dumbbell-dcqcn.yaml"
    over = rdmalab.load_scenario(dumbbell, {"switch.pfc.enabled": np.False_, "cc.params.g": np.float32(0.5)})
    assert over.to_json() == rdmalab.load_scenario(dumbbell, {"switch.pfc.enabled": False, "cc.params.g": 0.5}).to_json()
    from rdmalab.sweep.spec import sweep_from_dict

    def spec(b, f):
        return {"base": scenario(b(False), f(0.25)), "grid": {"cc.params.g": [f(0.25), f(0.5)]},
                "set": {"switch.pfc.enabled": b(True)}}

    theirs, ours = sweep_from_dict(spec(np.bool_, np.float32)), sweep_from_dict(spec(bool, float))
    assert [(r.run_id, r.params) for r in theirs.runs] == [(r.run_id, r.params) for r in ours.runs]
    assert all(type(v) is float for r in theirs.runs for v in r.params.values())
    assert json.dumps(theirs.spec) == json.dumps(ours.spec)


def test_the_flow_generator_takes_a_numpy_seed():
    from rdmalab.hpcc import generate_flows, load_cdf

    cdf = load_cdf("websearch")
    args = (cdf, 4, 0.3, 100e9, 0.0002)
    assert generate_flows(*args, np.int64(3)) == generate_flows(*args, 3) != generate_flows(*args, 4)
