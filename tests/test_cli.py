"""The front end: scenarios in, documented outputs out, clear refusals."""

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import rdmalab
from conftest import capped_and_finished
from rdmalab.outputs import OPTIONAL_TABLES, SCHEMAS


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "rdmalab", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def test_every_shipped_example_validates(examples):
    files = sorted(examples.rglob("*.yaml"))  # examples/scr/ too
    assert len(files) >= 5
    r = cli("validate", *files)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": ok") == len(files)
    # None sets a key that does nothing there, or starts flows too late.
    assert "warning" not in r.stderr, r.stderr


def test_run_writes_every_documented_table(examples, tmp_path, root):
    out = tmp_path / "run"
    r = cli("run", examples / "dumbbell-dcqcn.yaml", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "conservation  sent = arrived + dropped + in network" in r.stdout
    assert "VIOLATED" not in r.stdout
    docs = (root / "docs" / "outputs.md").read_text()
    for name, schema in SCHEMAS.items():
        for col in schema.names:
            assert f"`{col}`" in docs, f"column {name}.{col} is not documented in docs/outputs.md"
        if name in OPTIONAL_TABLES:  # written only when the scenario asks (records.counters)
            assert not (out / f"{name}.csv").exists() and not (out / f"{name}.parquet").exists(), name
            continue
        with open(out / f"{name}.csv") as f:
            header = next(csv.reader(f))
        assert header == schema.names, name
        assert pq.read_table(out / f"{name}.parquet").schema.names == schema.names
        for col in schema.names:
            assert f"`{col}`" in docs, f"column {name}.{col} is not documented in docs/outputs.md"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flows_completed"] == summary["flows_total"] > 0
    assert summary["data_payload_sent_bytes"] == (
        summary["data_payload_arrived_bytes"]
        + summary["data_payload_dropped_bytes"]
        + summary["data_payload_in_network_bytes"]
    )
    # The HPCC-style FCT file has one line per completed flow, 8 fields each.
    lines = (out / "fct.txt").read_text().splitlines()
    assert len(lines) == summary["flows_completed"]
    assert all(len(line.split()) == 8 for line in lines)


def _digests(d: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_same_scenario_and_seed_give_byte_identical_files(examples, tmp_path):
    for run in ("a", "b"):
        r = cli("run", examples / "fat-tree-websearch-dcqcn.yaml", "--out", tmp_path / run, "--quiet")
        assert r.returncode == 0, r.stderr
    a, b = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    assert a.keys() == b.keys() and len(a) >= 16
    assert a == b


def test_another_seed_changes_the_arrivals(examples, tmp_path):
    for seed in (1, 2):
        r = cli("run", examples / "fat-tree-websearch-dcqcn.yaml", "--out", tmp_path / str(seed), "--quiet",
                "--seed", seed, "--no-parquet")
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "1" / "flows.csv").read_text() != (tmp_path / "2" / "flows.csv").read_text()


def test_set_changes_keys_of_the_scenario_for_one_run(examples, tmp_path):
    """`--set KEY=VALUE` on `run` and `validate`: the key dotted as in
    sweeps, the value read as YAML reads it in the file; the run is the one
    an edited copy of the file gives, byte for byte, and its scenario.json
    says what ran."""
    src = examples / "dumbbell-dcqcn.yaml"
    r = cli("run", src, "--out", tmp_path / "set", "--quiet", "--no-parquet", "--set", "cc.algorithm=timely",
            "--set", "duration=2ms", "--set", "records.sample_interval=null")
    assert r.returncode == 0, r.stderr
    edited = tmp_path / "edited.yaml"
    text = src.read_text().replace("algorithm: dcqcn", "algorithm: timely").replace("duration: 10ms", "duration: 2ms")
    edited.write_text(text.replace("  sample_interval: 20us", "  {}"))
    assert cli("run", edited, "--out", tmp_path / "edited", "--quiet", "--no-parquet").returncode == 0
    ran = json.loads((tmp_path / "set" / "scenario.json").read_text())
    assert ran["cc"] == {"algorithm": "timely"} and ran["duration"] == "2ms", ran
    assert ran["records"] == {}, ran
    assert _digests(tmp_path / "set") == _digests(tmp_path / "edited")
    r = cli("validate", src, "--set", "duration=1ms")
    assert r.returncode == 0 and "cc dcqcn, 1 ms" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("args,says", [
    (["--set", "duration"], "--set `duration`: allowed: KEY=VALUE"),
    (["--set", "duration="], "--set duration: no value after `=`"),
    (["--set", "seed=3", "--set", "seed=4"], "--set seed: given twice"),
    (["--set", "seed=3", "--seed", "4"], "--seed and --set seed=... both given"),
    (["--set", "cc.algorithm=nope"], "cc.algorithm: `nope`"),
    (["--set", "colour=red"], "colour: unknown key"),
    # A key that names no place in the scenario: the --set as typed, not an anonymous `override:`.
    (["--set", "cc..algorithm=hpcc"], "--set cc..algorithm=hpcc: `cc..algorithm` is not a scenario key"),
    (["--set", "cc.algorithm.kind= x"], "--set cc.algorithm.kind=x: `cc.algorithm.kind` — `cc.algorithm` is "
                                        "`dcqcn`, not a mapping"),
    (["--set", "workload.perftest[9].queue_depth=4"],
     "--set workload.perftest[9].queue_depth=4: `workload.perftest[9].queue_depth` — `workload.perftest` has 4 items "
     "(indices 0 to 3)"),
])
def test_bad_set_arguments_are_refused_before_the_run(examples, tmp_path, args, says):
    r = cli("run", examples / "dumbbell-dcqcn.yaml", "--out", tmp_path / "out", "--quiet", *args)
    assert r.returncode != 0 and says in r.stderr, r.stderr
    assert "override" not in r.stderr, r.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
    if "seed" not in " ".join(args):
        v = cli("validate", examples / "dumbbell-dcqcn.yaml", *args)
        assert v.returncode != 0 and says in v.stderr, v.stderr


BAD = {
    "unknown key": ("duration: 1ms\ntopology: {kind: single_switch, hosts: 2, host_link: {rate: 100Gbps}}\n"
                    "workload: {flows: [{src: h0, dst: h1, size: 1KB, colour: red}]}\n",
                    "workload.flows[0].colour: unknown key"),
    "missing unit": ("duration: 1ms\ntopology: {kind: single_switch, hosts: 2, host_link: {rate: 100}}\n"
                     "workload: {flows: [{src: h0, dst: h1, size: 1KB}]}\n",
                     "topology.host_link.rate: `100` — has no unit"),
    "missing host": ("duration: 1ms\ntopology: {kind: single_switch, hosts: 2, host_link: {rate: 100Gbps}}\n"
                     "workload: {flows: [{src: h0, dst: h7, size: 1KB}]}\n",
                     "workload.flows[0].dst: `h7` — no such host"),
    "zero rate": ("duration: 1ms\ntopology: {kind: single_switch, hosts: 2, host_link: {rate: 0Gbps}}\n"
                  "workload: {flows: [{src: h0, dst: h1, size: 1KB}]}\n",
                  "topology.host_link.rate: `0Gbps` — must be greater than 0"),
    "negative rate": ("duration: 1ms\ntopology: {kind: single_switch, hosts: 2, host_link: {rate: -1Gbps}}\n"
                      "workload: {flows: [{src: h0, dst: h1, size: 1KB}]}\n",
                      "topology.host_link.rate: `-1Gbps`"),
    "disconnected": ("duration: 1ms\ntopology: {kind: hpcc_file, path: islands.txt}\n"
                     "workload: {flows: [{src: h0, dst: h3, size: 1KB}]}\n",
                     "topology: h0 → h3 — the topology does not connect these two endpoints of a flow"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_scenarios_are_refused_before_the_run_with_the_key_and_value(case, tmp_path):
    text, message = BAD[case]
    (tmp_path / "islands.txt").write_text("6 2 4\n4 5\n0 4 100Gbps 1us 0\n1 4 100Gbps 1us 0\n"
                                          "2 5 100Gbps 1us 0\n3 5 100Gbps 1us 0\n")
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    r = cli("run", path, "--out", tmp_path / "out")
    assert r.returncode == 2
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists(), "nothing may run or be written for a refused scenario"
    v = cli("validate", path)
    assert v.returncode == 1 and message in v.stderr


def test_unreadable_files_are_errors_not_hangs(tmp_path):
    r = cli("run", tmp_path / "nope.yaml", "--out", tmp_path / "o")
    assert r.returncode == 2 and "cannot be read" in r.stderr
    (tmp_path / "t.yaml").write_text("duration: 1ms\ntopology: {kind: hpcc_file, path: missing.txt}\nworkload: {}\n")
    r = cli("validate", tmp_path / "t.yaml")
    assert r.returncode == 1 and "topology.path" in r.stderr


def test_python_api_runs_a_scenario_from_a_dict(tmp_path):
    sc = rdmalab.scenario_from_dict({
        "duration": "2ms",
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "25Gbps", "delay": "1us"}},
        "workload": {"flows": [{"src": "h0", "dst": "h2", "size": "100KB"}, {"src": "h1", "dst": "h2", "size": "100KB"}]},
    })
    res = rdmalab.run(sc, out_dir=tmp_path)
    assert res.summary["flows_completed"] == 2
    flows = pq.read_table(tmp_path / "flows.parquet").to_pylist()
    assert all(f["slowdown"] >= 1.0 for f in flows)


def test_a_run_that_hits_the_event_cap_fails_clearly(tmp_path):
    sc = rdmalab.scenario_from_dict({
        "duration": "10ms", "max_events": 1000,
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps"}},
        "workload": {"flows": [{"src": "h0", "dst": "h1", "size": "10MB"}]},
    })
    with pytest.raises(rdmalab.RunError, match="max_events = 1000"):
        rdmalab.run(sc)


def test_the_event_cap_names_the_keys_as_written_and_the_time_the_summary_gives(tmp_path):
    """The message named `run.max_events` and `run.duration`, keys that do not
    exist, and gave the time of the next event, not of the last one run,
    which `summary.json` gives."""
    import re

    from rdmalab.analysis import parse_time_ps

    f = tmp_path / "s.yaml"
    f.write_text("duration: 10ms\nmax_events: 1000\n"
                 "topology: {kind: single_switch, hosts: 2, host_link: {rate: 100Gbps}}\n"
                 "workload: {flows: [{src: h0, dst: h1, size: 10MB}]}\n")
    r = subprocess.run([sys.executable, "-m", "rdmalab", "run", str(f), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "run.max_events" not in r.stderr and "run.duration" not in r.stderr, r.stderr
    m = re.search(r"reached max_events = 1000 at simulated time (\S+) with events still due; "
                  r"raise max_events or shorten duration", r.stderr)
    assert m, r.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["sim_time_ps"] > 0
    assert parse_time_ps(m.group(1)) == summary["sim_time_ps"]


def test_the_algorithm_reference_is_generated_from_the_code(root):
    from rdmalab.cli import algorithms_markdown

    assert (root / "docs" / "algorithms.md").read_text() == algorithms_markdown() + "\n", (
        "docs/algorithms.md is stale: run `rdmalab algorithms --markdown > docs/algorithms.md`"
    )
    names = [a["name"] for a in rdmalab._core.algorithms()]
    assert names == ["none", "dcqcn", "timely", "dctcp", "hpcc", "swift", "fair-static", "water-filling", "doca-rtt",
                     "receiver-grants", "receiver-backpressure", "homa", "tenant-guard", "multipath"]
    for a in rdmalab._core.algorithms():
        for p in a["params"]:
            assert p["source"] and p["unit"] and p["default"], (a["name"], p["name"])


@pytest.mark.parametrize("alg", ["timely", "dctcp", "hpcc", "swift"])
def test_every_algorithm_runs_from_a_scenario(alg, tmp_path):
    sc = rdmalab.scenario_from_dict({
        "duration": "2ms",
        "cc": {"algorithm": alg},
        "switch": {"int": alg == "hpcc"},
        "topology": {"kind": "single_switch", "hosts": 3, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "workload": {"incast": {"senders": 2, "receiver": "h2", "size": "1MB"}},
    })
    res = rdmalab.run(sc, out_dir=tmp_path, parquet=False)
    assert res.summary["cc"] == alg
    assert res.summary["flows_completed"] == 2


def test_algorithm_parameters_are_checked_with_units_and_ranges(tmp_path):
    sc = rdmalab.scenario_from_dict({
        "duration": "1ms",
        "cc": {"algorithm": "swift", "params": {"base_delay": 5, "beta": 2.0, "colour": "red"}},
        "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps"}},
        "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB"}]},
    })
    with pytest.raises(rdmalab.ScenarioError) as e:
        rdmalab.validate(sc)
    msg = str(e.value)
    assert "cc.params.colour: unknown key" in msg
    assert "cc.params.base_delay: `5` — has no unit" in msg
    assert "cc.params.beta: `2` — allowed: 0 to 1" in msg


def test_a_placement_records_control_loop_delays(examples, tmp_path):
    out = tmp_path / "dpa"
    r = cli("run", examples / "placement-swift-dpa.yaml", "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["control_placement"] == "dpa"
    assert summary["control_actions_installed"] > 0
    delays = pq.read_table(out / "control_delays.parquet").to_pylist()
    assert len(delays) == summary["control_actions_installed"]
    # DPA: at least 7 µs trigger + 4 µs processing + 6 µs install.
    assert min(d["delay_ps"] for d in delays) >= 17_000_000
    assert {d["event"] for d in delays} <= {"TX", "ACK", "NACK", "CNP", "TIMER", "TIMEOUT"}


def test_loading_a_scenario_imports_nothing_heavy(examples):
    """A run's process stays small: Polars, PyArrow and matplotlib are imported
    only to write outputs or draw figures (the benchmark measures peak memory)."""
    # scr-multipath-failover names figures: checking the names imports nothing either.
    code = ("import sys; from rdmalab.scenario import load_scenario; "
            f"load_scenario({str(examples / 'scr' / 'scr-two-tenants.yaml')!r}); "
            f"load_scenario({str(examples / 'scr' / 'scr-multipath-failover.yaml')!r}); "
            "print(sorted(m for m in ('polars', 'pyarrow', 'matplotlib') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_the_static_figure_list_is_what_the_modules_register():
    from rdmalab.casestudies import MODULES, known

    figs = known()
    assert set(MODULES) == set(figs)
    for name, module in MODULES.items():
        assert figs[name].draw.__module__ == f"rdmalab.casestudies.{module}", name


def test_run_and_sweep_say_which_command_a_file_needs(examples, tmp_path):
    r = cli("run", examples / "cc-comparison-sweep.yaml", "--out", tmp_path / "a")
    assert r.returncode == 2 and "is a sweep file" in r.stderr and "rdmalab sweep" in r.stderr, r.stderr
    r = cli("sweep", examples / "dumbbell-dcqcn.yaml", "--out", tmp_path / "b")
    assert r.returncode == 2 and "is a scenario" in r.stderr and "rdmalab run" in r.stderr, r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_algorithms_refuses_an_unknown_name_and_lists_python_and_c():
    r = cli("algorithms", "nope")
    assert r.returncode == 2 and "no algorithm `nope`" in r.stderr and "python, c" in r.stderr
    r = cli("algorithms", "c")
    assert r.returncode == 0 and "docs/c-controllers.md" in r.stdout and "dcqcn" not in r.stdout
    r = cli("algorithms", "")  # an empty name is no name: not the whole list
    assert r.returncode == 2 and "no algorithm ``" in r.stderr and not r.stdout, r.stdout
    r = cli("--help")
    assert "sweep-task" not in r.stdout
    r = cli("nope")
    assert r.returncode == 2 and "unknown command `nope`; allowed: run," in r.stderr and "sweep-task" not in r.stderr


def test_out_into_a_directory_of_other_files_is_refused(examples, tmp_path):
    # a run's --out: new, empty, or an earlier run's (replaced); never someone's other files
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    r = cli("run", examples / "incast-pfc.yaml", "--out", tmp_path / "mine", "--quiet")
    assert r.returncode == 2 and "is not empty and not an earlier run's directory (it holds notes.txt)" in r.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    out = tmp_path / "run"
    for _ in range(2):  # an earlier run's directory is reused, with its report and plots
        r = cli("run", examples / "incast-pfc.yaml", "--out", out)
        assert r.returncode == 0, r.stderr
        (out / "report.html").write_text("")
    assert "files of an earlier run" in r.stderr and (out / "report.html").exists()
    # a sweep's --out: new, empty, or a sweep directory (resumed)
    r = cli("sweep", examples / "cc-comparison-sweep.yaml", "--out", tmp_path / "mine", "--dry-run")
    assert r.returncode == 0  # a dry run writes nothing
    r = cli("sweep", examples / "cc-comparison-sweep.yaml", "--out", tmp_path / "mine")
    assert r.returncode == 2 and "is not empty and not a sweep directory (it holds notes.txt)" in r.stderr
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_counts_are_written_with_their_plurals(examples):
    r = cli("validate", examples / "incast-pfc.yaml")
    assert r.returncode == 0 and "17 hosts, 1 switch, 17 links, 16 flows, 0 applications" in r.stdout, r.stdout


def test_a_single_run_does_not_load_the_sweep_tables_library(examples, tmp_path):
    # Polars is for sweeps and analysis; a run (and `hpcc run`, which imports
    # the command line's FCT and sweep errors) paid 0.25 s to load it.
    code = (
        "import sys\n"
        "from rdmalab.cli import main\n"
        "import rdmalab.hpcc, rdmalab.sweep.spec\n"
        f"rc = main(['run', {str(examples / 'dumbbell-dcqcn.yaml')!r}, '--out', {str(tmp_path / 'out')!r}, '--quiet'])\n"
        "assert rc == 0, rc\n"
        "print(sorted(m for m in sys.modules if m == 'polars' or m.startswith('polars.'))[:3])\n"
        "import rdmalab.sweep\n"
        "print(rdmalab.sweep.store.Results.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # No Polars after the run; the store is still an attribute of the package.
    assert out.strip().splitlines()[-2:] == ["[]", "Results"], out
    # The names stay where users import them from.
    from rdmalab.hpcc.fct import FctFileError
    from rdmalab.sweep import BACKENDS, NotResults, Results, StoreBusy, run_sweep

    assert BACKENDS == ("local", "ray", "slurm") and issubclass(FctFileError, ValueError)
    assert callable(run_sweep) and Results.__module__ == "rdmalab.sweep.store"
    assert issubclass(NotResults, ValueError) and issubclass(StoreBusy, RuntimeError)


def test_the_run_summary_gives_the_flows_tables_slowdown_and_fct_quantiles(examples, tmp_path):
    # The summary reads flows.csv itself (no pyarrow); its numbers must be the table's.
    import re

    r = cli("run", str(examples / "dumbbell-dcqcn.yaml"), "--out", str(tmp_path), "--quiet")
    assert r.returncode == 0, r.stderr
    flows = pq.read_table(tmp_path / "flows.parquet")
    sd = sorted(flows.column("slowdown").to_pylist())
    fct = sorted(flows.column("fct_ps").to_pylist())

    def q(xs, p):
        return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]

    m = re.search(r"FCT slowdown +p50 ([\d.]+) +p95 ([\d.]+) +p99 ([\d.]+) +max ([\d.]+)", r.stdout)
    assert m, r.stdout
    assert [float(x) for x in m.groups()] == [round(q(sd, p), 2) for p in (0.5, 0.95, 0.99, 1.0)]
    from rdmalab.units import fmt_time

    assert f"FCT           p50 {fmt_time(q(fct, 0.5))}  p99 {fmt_time(q(fct, 0.99))}" in r.stdout, r.stdout
    assert len(sd) > 20 and sd[0] < sd[-1]


@pytest.mark.parametrize("args", [["algorithms"], ["figures"]])
def test_a_reader_that_stops_reading_gets_no_traceback(args):
    """`rdmalab algorithms | head`: the pipe closes before rdmalab writes."""
    p = subprocess.Popen([sys.executable, "-m", "rdmalab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    p.stderr.close()
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err
    assert p.returncode == 141


def test_the_run_summary_and_analyze_give_the_same_quantiles(tmp_path):
    """Both take the nearest rank (the ⌈q·n⌉-th smallest): with twelve
    flows the median is the 6th, where the rounded index (n − 1) / 2 gave
    the 7th, so the same run's p50 differed between the two commands."""
    f = tmp_path / "s.yaml"
    flows = "\n".join(f"    - {{src: h{i % 3}, dst: h3, size: {4 * (i + 1)}KB, start: {i}us}}" for i in range(12))
    f.write_text("name: q\nduration: 2ms\n"
                 "topology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps, delay: 1us}}\n"
                 f"workload:\n  flows:\n{flows}\n")
    r = subprocess.run([sys.executable, "-m", "rdmalab", "run", str(f), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.strip().startswith("FCT slowdown"))
    p50, p99 = float(line.split()[3]), float(line.split()[7])
    with open(tmp_path / "o" / "flows.csv") as fh:
        sd = sorted(float(row["slowdown"]) for row in csv.DictReader(fh))
    assert len(sd) == 12 and sd[5] != sd[6], sd
    assert (p50, p99) == (round(sd[5], 2), round(sd[11], 2)), (line, sd)
    a = subprocess.run([sys.executable, "-m", "rdmalab", "analyze", str(tmp_path / "o"), "--buckets", "1"],
                       capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    row = a.stdout.splitlines()[-1].split()
    assert round(float(row[5]), 2) == p50, a.stdout


def test_analyze_calls_a_failed_run_failed_not_finished(tmp_path):
    """`analyze` of a single run that ended early said "1 finished run"."""
    runs = capped_and_finished(tmp_path, "{src: h0, dst: h1, size: 64KB}, {src: h0, dst: h1, size: 1MB}")
    for name, (out, end) in runs.items():
        r = cli("analyze", out, "--buckets", "1")
        assert r.returncode == 0, r.stderr
        head = r.stdout.splitlines()[0]
        if name == "failed":
            assert end == "failed" and "1 failed run" in head and "finished run" not in head, head
        else:
            assert end != "failed" and "1 finished run" in head, head


def test_analyze_plot_and_report_say_how_many_flows_did_not_complete(tmp_path):
    """The flows table holds completed flows only: a run cut short before its
    long flows finished would look better than it was, without a word."""
    f = tmp_path / "s.yaml"
    flows = "\n".join(f"    - {{src: h{i % 3}, dst: h3, size: {4 * (i + 1)}KB, start: {i}us}}" for i in range(12))
    f.write_text("name: q\nduration: 2ms\n"
                 "topology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps, delay: 1us}}\n"
                 f"workload:\n  flows:\n{flows}\n    - {{src: h0, dst: h3, size: 4KB, start: 5ms}}\n")
    out = tmp_path / "o"
    assert cli("run", f, "--out", out, "--quiet").returncode == 0
    said = ("rdmalab: warning: 1 of 13 flows did not complete; FCTs and slowdowns are of completed flows only "
            "(flows that start after `duration`, or need longer, are not counted)")
    for args in (["analyze", out], ["report", out], ["plot", out, "--out", tmp_path / "plots"]):
        r = cli(*args)
        assert r.returncode == 0 and said in r.stderr, (args, r.stderr)
    f.write_text(f.read_text().replace("start: 5ms", "start: 50us"))
    assert cli("run", f, "--out", out, "--quiet").returncode == 0
    r = cli("analyze", out)
    assert r.returncode == 0 and "did not complete" not in r.stderr, r.stderr


def test_a_bare_zero_needs_no_unit_but_any_other_number_does():
    def flow(start):
        return rdmalab.scenario_from_dict({
            "duration": "1ms",
            "topology": {"kind": "single_switch", "hosts": 2, "host_link": {"rate": "100Gbps", "delay": 0}},
            "workload": {"flows": [{"src": 0, "dst": 1, "size": "1KB", "start": start}]},
        })

    rdmalab.validate(flow(0))  # zero is zero in every unit
    r = rdmalab.run(flow(0))
    assert r.table("flows")["start_ps"][0] == 0
    with pytest.raises(rdmalab.ScenarioError) as e:
        rdmalab.validate(flow(5))
    assert "workload.flows[0].start: `5` — has no unit" in str(e.value)
