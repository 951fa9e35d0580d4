"""Bad input is refused before anything runs, with a message that names the
key (issue 15: accepted nonsense and raw errors), never run with a value its
author did not mean."""

import datetime
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import rdmalab_cli

import rdmalab
from rdmalab._core import ScenarioError

TOPO = "topology: {kind: single_switch, hosts: 3, host_link: {rate: 100Gbps, delay: 1us}}\n"


def refused(tmp_path, text: str, name="s.yaml") -> str:
    f = tmp_path / name
    f.write_text(text)
    r = rdmalab_cli("run", str(f), "--out", str(tmp_path / "out"))
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "out" / "flows.csv").exists(), "nothing ran"
    return r.stderr


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path):
    e = refused(tmp_path, "name: d\nduration: 1ms\nduration: 2ms\n" + TOPO + "workload: {poisson: {cdf: websearch, load: 0.3}}\n")
    assert "key `duration` given twice (first on line 2)" in e and "line 3" in e


def test_a_key_given_twice_in_a_sweep_is_refused(tmp_path):
    (tmp_path / "base.yaml").write_text("name: b\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: websearch, load: 0.3}}\n")
    f = tmp_path / "sw.yaml"
    f.write_text("base: base.yaml\ngrid:\n  seed: [1, 2]\n  seed: [3]\n")
    r = rdmalab_cli("sweep", str(f), "--out", str(tmp_path / "o"))
    assert r.returncode != 0 and "key `seed` given twice" in r.stderr, r.stderr


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_numbers_name_their_key(tmp_path, value):
    e = refused(tmp_path, "name: n\nduration: 1ms\n" + TOPO + f"workload: {{poisson: {{cdf: websearch, load: {value}}}}}\n")
    assert "workload.poisson.load" in e and "not a finite number" in e


def test_non_finite_numbers_in_a_dict_scenario(tmp_path):
    with pytest.raises(ScenarioError, match=r"workload\.perftest\[0\]\.queue_depth"):
        rdmalab.scenario_from_dict({"duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2},
                                    "workload": {"perftest": [{"src": "h0", "dst": "h1", "queue_depth": math.inf}]}})


def test_an_integer_beyond_64_bits_is_shown_as_written(tmp_path):
    # JSON carried it to the core as a float: `seed: 18446744073709551616` was
    # refused as `1.8446744073709552e+19`, a number nobody wrote.
    big = "18446744073709551616"
    says = f"seed: `{big}` — beyond 64 bits"
    e = refused(tmp_path, f"name: b\nseed: {big}\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: websearch, load: 0.3}}\n")
    assert says in e and "e+19" not in e, e
    ok = tmp_path / "ok.yaml"
    ok.write_text("name: b\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: websearch, load: 0.3}}\n")
    r = rdmalab_cli("validate", str(ok), "--set", f"seed={big}")
    assert r.returncode != 0 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    with pytest.raises(ScenarioError, match=r"workload\.perftest\[0\]\.queue_depth: `-18446744073709551616` — beyond"):
        rdmalab.validate({"duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2},
                          "workload": {"perftest": [{"src": "h0", "dst": "h1", "queue_depth": -2**64}]}})
    r = rdmalab_cli("validate", str(ok), "--set", "seed=18446744073709551615")
    assert r.returncode == 0, r.stderr


def test_a_poisson_host_listed_twice_is_refused(tmp_path):
    e = refused(tmp_path, "name: p\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: websearch, load: 0.3, hosts: [h0, h1, h1]}}\n")
    assert "workload.poisson.hosts[2]" in e and "appears twice" in e


def test_zero_workers_is_refused(examples, tmp_path):
    r = rdmalab_cli("sweep", str(examples / "attacks" / "attacks-fig3-parallel.yaml"), "--out", str(tmp_path / "o"),
                    "--workers", "0")
    assert r.returncode == 2 and "--workers: `0` — allowed: 1 or more" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_an_output_path_that_is_a_file_is_refused_before_the_run(examples, tmp_path):
    f = tmp_path / "afile"
    f.write_text("")
    for out, what in ((f, "is a file; give a directory"), (f / "sub", "cannot be written (Not a directory)")):
        r = rdmalab_cli("run", str(examples / "dumbbell-dcqcn.yaml"), "--out", str(out), "--quiet")
        assert r.returncode == 2 and "nothing was run" in r.stderr and "Traceback" not in r.stderr, r.stderr
        # The option as typed, not the Python API's `out_dir` (tests/test_python_api.py).
        assert f"--out: `{out}` {what}" in r.stderr and "out_dir" not in r.stderr, r.stderr


def test_a_sweep_output_path_that_is_a_file_is_refused_before_the_sweep(tmp_path):
    (tmp_path / "base.yaml").write_text("name: b\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: websearch, load: 0.3}}\n")
    sweep = tmp_path / "sw.yaml"
    sweep.write_text("base: base.yaml\ngrid:\n  seed: [1, 2]\n")
    for out in (sweep, sweep / "sub"):
        for backend in ("local", "slurm"):
            r = rdmalab_cli("sweep", str(sweep), "--out", str(out), "--quiet", "--backend", backend)
            assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
            assert f"--out: `{sweep}` is a file" in r.stderr and "nothing was run" in r.stderr, r.stderr


def test_an_earlier_runs_tables_are_not_read_with_a_new_one(tmp_path):
    from rdmalab.outputs import read_table

    def scen(size):
        return rdmalab.scenario_from_dict({
            "duration": "1ms", "topology": {"kind": "single_switch", "hosts": 2,
                                            "host_link": {"rate": "100Gbps", "delay": "1us"}},
            "workload": {"flows": [{"src": "h0", "dst": "h1", "size": size}]}})

    out = tmp_path / "run"
    rdmalab.run(scen("10KB"), out_dir=out)
    # What `rdmalab report` and `rdmalab plot` wrote of the first run, and a file of the user's.
    r = rdmalab_cli("report", out)
    assert r.returncode == 0, r.stderr
    (out / "plots").mkdir()
    (out / "plots" / "fct-cdf.png").write_bytes(b"png")
    (out / "plots" / "fct-cdf.csv").write_text("x\n")
    (out / "plots" / "notes.txt").write_text("mine\n")
    # A second run without Parquet: the first run's Parquet files must not be read instead.
    rdmalab.run(scen("20KB"), out_dir=out, parquet=False)
    assert read_table(out, "flows").column("size_bytes").to_pylist() == [20_000]
    # Nor its report or plots shown: they describe the first run.
    assert not (out / "report.html").exists()
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["notes.txt"]


def test_a_zero_size_cdf_is_refused_not_drawn_forever(tmp_path):
    e = refused(tmp_path, "name: z\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: [[0, 0], [0, 100]], load: 0.3}}\n")
    assert "workload.poisson.cdf" in e and "average at least 1 byte" in e


def test_a_poisson_entry_that_would_draw_too_many_flows_is_refused(tmp_path):
    topo = "topology: {kind: single_switch, hosts: 64, host_link: {rate: 400Gbps, delay: 1us}}\n"
    e = refused(tmp_path, "name: big\nduration: 1s\n" + topo + "workload: {poisson: {cdf: googlerpc2008, load: 0.9}}\n")
    assert "workload.poisson" in e and "flows per entry" in e


def test_an_alias_bomb_and_deep_nesting_are_refused(tmp_path):
    rows = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i, name in enumerate("bcdefgh"):
        prev = "abcdefg"[i]
        rows.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    e = refused(tmp_path, "name: b\nduration: 1ms\n" + TOPO + "\n".join(rows) + "\nworkload: {flows: [{src: h0, dst: h1, size: 1KB}]}\n")
    assert "more than 5000000 values" in e
    e = refused(tmp_path, "name: d\nduration: 1ms\n" + TOPO + "x: " + "[" * 100 + "]" * 100 + "\n", name="d.yaml")
    assert "nested deeper than 64 levels" in e


def test_a_sweep_is_copied_with_its_aliases_shared_not_expanded():
    # sweep_from_dict copies a sweep to make its NumPy integers ints
    # (rdmalab.scenario.plain). An inline base is a YAML alias bomb: copied
    # as copy.deepcopy copies, a list reached ten times is copied once; a
    # walk that copied each time would make 10^8 values before the scenario
    # check refuses it (test_an_alias_bomb_and_deep_nesting_are_refused).
    import yaml

    from rdmalab.scenario import plain

    rows = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i, name in enumerate("bcdefgh"):
        rows.append(f"{name}: &{name} [" + ", ".join([f"*{'abcdefg'[i]}"] * 10) + "]")
    bomb = yaml.safe_load("\n".join(rows))
    copied = plain({"base": bomb})["base"]
    assert copied["h"] is not bomb["h"] and copied["h"][0] is copied["h"][9] is copied["g"]
    assert copied["a"] == bomb["a"]


def test_a_sample_interval_that_would_write_billions_of_rows_is_refused(tmp_path):
    e = refused(tmp_path, "name: s\nduration: 10ms\n" + TOPO + "records: {sample_interval: 1ps}\n"
                "workload: {flows: [{src: h0, dst: h1, size: 1KB}]}\n")
    assert "records.sample_interval" in e and "at most 10000000" in e


def test_a_sweep_of_too_many_runs_is_refused(tmp_path):
    (tmp_path / "base.yaml").write_text("name: b\nduration: 1ms\n" + TOPO + "workload: {flows: [{src: h0, dst: h1, size: 1KB}]}\n")
    for body, msg in (("seeds: {first: 1, count: 1000000000000}\n", "seeds.count"),
                      ("grid:\n  seed: " + str(list(range(1000))) + "\n  workload.flows[0].size: " + str([f"{i + 1}KB" for i in range(1000)]) + "\n",
                       "1000000 runs")):
        f = tmp_path / "sw.yaml"
        f.write_text("base: base.yaml\n" + body)
        r = rdmalab_cli("sweep", str(f), "--out", str(tmp_path / "o"))
        assert r.returncode == 2 and msg in r.stderr and "at most" in r.stderr, r.stderr


def test_a_device_a_huge_file_or_binary_input_is_refused_not_read(tmp_path):
    r = rdmalab_cli("run", "/dev/zero", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    e = refused(tmp_path, "name: t\nduration: 1ms\ntopology: {kind: hpcc_file, path: /dev/zero}\n"
                "workload: {flows: [{src: 0, dst: 1, size: 1KB}]}\n")
    assert "topology.path" in e and "not a regular file" in e
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(65 * 1024 * 1024)  # sparse: no disk used
    e = refused(tmp_path, "name: c\nduration: 1ms\n" + TOPO + "workload: {poisson: {cdf: big.txt, load: 0.3}}\n", name="c.yaml")
    assert "workload.poisson.cdf" in e and "at most 67108864" in e
    (tmp_path / "bin.yaml").write_bytes(bytes(range(128, 256)))
    r = rdmalab_cli("run", str(tmp_path / "bin.yaml"), "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and "not UTF-8 text" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.fixture(scope="module")
def a_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    (d / "s.yaml").write_text("name: r\nduration: 1ms\n" + TOPO +
                              "workload: {flows: [{src: 0, dst: 1, size: 100KB}, {src: 1, dst: 2, size: 10KB}]}\n")
    r = rdmalab_cli("run", str(d / "s.yaml"), "--out", str(d / "out"))
    assert r.returncode == 0, r.stderr
    return d / "out"


@pytest.mark.parametrize("damage,message", [
    (lambda d: (d / "flows.parquet").write_bytes((d / "flows.parquet").read_bytes()[:100]),
     "flows.parquet cannot be read as rdmalab's flows table"),
    (lambda d: (d / "summary.json").write_text("{broken"), "summary.json cannot be read as the JSON"),
    (lambda d: [(d / f"flows.{x}").unlink() for x in ("parquet", "csv")], "has no flows table"),
    (lambda d: ((d / "flows.parquet").unlink(), (d / "flows.csv").write_text("a,b\n1,2\n")),
     "flows.csv lacks the flows table's columns flow_id"),
    (lambda d: (d / "scenario.json").write_bytes(b"\xff\xfe"), "scenario.json cannot be read as the JSON"),
    (lambda d: (d / "qp_samples.parquet").write_bytes(b"PAR1 not really"), "qp_samples.parquet cannot be read"),
])
@pytest.mark.parametrize("command", ["analyze", "report", "plot"])
def test_damaged_outputs_give_analyze_report_and_plot_a_message_not_a_traceback(a_run, tmp_path, damage, message,
                                                                                command):
    import shutil

    d = tmp_path / "copy"
    shutil.copytree(a_run, d)
    damage(d)
    args = {"analyze": [], "report": ["--out", str(tmp_path / "r.html")], "plot": ["--out", str(tmp_path / "p")]}
    r = rdmalab_cli(command, str(d), *args[command])
    if command == "plot" and "scenario.json" in message:
        assert r.returncode == 0, r.stderr  # plots never read the scenario
        return
    if command == "analyze" and ("qp_samples" in message or "scenario.json" in message):
        assert r.returncode == 0, r.stderr  # analyze reads only the flows
        return
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (command, r.stderr)


def test_a_run_written_before_qp_samples_had_window_bytes_still_reads(a_run, tmp_path):
    import shutil

    import pyarrow.csv as pacsv

    from rdmalab.outputs import read_table

    d = tmp_path / "old"
    shutil.copytree(a_run, d)
    (d / "qp_samples.parquet").unlink()
    old = pacsv.read_csv(d / "qp_samples.csv").drop_columns(["window_bytes"])
    pacsv.write_csv(old, d / "qp_samples.csv")
    t = read_table(d, "qp_samples")
    assert t.num_rows == old.num_rows > 0 and t.column("window_bytes").null_count == t.num_rows
    r = rdmalab_cli("report", str(d), "--out", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr


NAMED = ("name: n\nduration: 100us\n" + TOPO
         + "host:\n  scheduler:\n    period: 50us\n    policies:\n"
         + "      - {name: POLICY, when: [{signal: active_qps, above: 512}], then: {set_qps: 1, job: JOB}}\n"
         + "workload:\n  tenants: {TENANT: {hosts: [h0]}}\n"
         + "  perftest:\n    - {name: APP, job: JOB, src: h0, dst: h1, message_size: 4KB}\n")


@pytest.mark.parametrize("what,key", [("TENANT", "workload.tenants.{v}"), ("APP", "workload.perftest[0].name"),
                                      ("JOB", "workload.perftest[0].job"), ("POLICY", "host.scheduler.policies[0].name")])
@pytest.mark.parametrize("bad", ["a,b", 'say "hi"'])
def test_names_the_tables_write_cannot_split_a_csv_cell(tmp_path, what, key, bad):
    # The tables are CSV without quoting: a comma in a tenant's name shifted every later cell of its rows.
    fine = {"TENANT": "t1", "APP": "a1", "JOB": "j1", "POLICY": "p1"}
    text = NAMED
    for k, v in fine.items():
        text = text.replace(k, "'" + (bad if k == what else v) + "'")
    e = refused(tmp_path, text)
    assert key.format(v=bad) in e and "a name without commas, double quotes or line breaks" in e, e
    ok = NAMED
    for k, v in fine.items():
        ok = ok.replace(k, v)
    (tmp_path / "ok.yaml").write_text(ok)
    rdmalab.validate(rdmalab.load_scenario(tmp_path / "ok.yaml"))


def _cli_case(tmp_path, examples, case):
    """The files a CLI case needs, in `tmp_path`; the command's arguments."""
    mix = examples / "hpcc" / "mix"
    (tmp_path / "zero.txt").write_text("0 0\n0 100\n")
    (tmp_path / "nan.txt").write_text("0 0\nnan 50\n1000 100\n")
    (tmp_path / "bin.txt").write_bytes(b"0 0\n\xff\xfe\x00 100\n")
    (tmp_path / "file.txt").write_text("x\n")
    config = (mix / "config-dcqcn.txt").read_text()
    for k in ("TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE"):
        config = "\n".join(f"{k} {mix / Path(ln.split()[1]).name}" if ln.startswith(k + " ") else ln
                           for ln in config.splitlines())
    outs = ("FCT_OUTPUT_FILE", "PFC_OUTPUT_FILE", "QLEN_MON_FILE", "TRACE_OUTPUT_FILE")

    def cfg(name, **changes):
        lines = []
        for ln in config.splitlines():
            key = ln.split(" ", 1)[0]
            if key in outs:
                ln = f"{key} {tmp_path / (key.lower() + '.txt')}"
            lines.append(f"{key} {changes[key]}" if key in changes else ln)
        if "LINK_DOWN" in changes and not any(ln.startswith("LINK_DOWN") for ln in lines):
            lines.append(f"LINK_DOWN {changes['LINK_DOWN']}")
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        return str(tmp_path / name)

    traffic = ["hpcc", "traffic", "-c", "websearch", "-n", "4", "-t", "0.001", "-o", str(tmp_path / "f.txt")]
    missing = str(tmp_path / "no-such-dir" / "x")
    return {
        "traffic-zero-mean-cdf": (["hpcc", "traffic", "-c", str(tmp_path / "zero.txt"), "-n", "4", "-t", "0.001", "-o",
                                   str(tmp_path / "f.txt")], "the mean flow size is 0 B"),
        "traffic-nan-cdf": (["hpcc", "traffic", "-c", str(tmp_path / "nan.txt"), "-n", "4", "-o",
                             str(tmp_path / "f.txt")], "line 2: `nan 50` — allowed: finite numbers"),
        "traffic-binary-cdf": (["hpcc", "traffic", "-c", str(tmp_path / "bin.txt"), "-n", "4", "-o",
                                str(tmp_path / "f.txt")], "not UTF-8 text"),
        "traffic-inf-time": (traffic + ["-t", "inf"], "--time: `inf` — allowed: a finite number"),
        "traffic-nan-base": (traffic + ["--base", "nan"], "--base: `nan` — allowed: a finite number"),
        "traffic-negative-base": (traffic + ["--base", "-5"], "--base: `-5` — allowed: 0 or more"),
        "traffic-huge-bandwidth": (traffic + ["-b", "1e400"], "bandwidth `1e400`"),
        "traffic-output-dir-missing": (traffic[:-1] + [missing], "its directory"),
        "traffic-output-is-dir": (traffic[:-1] + [str(tmp_path)], "is a directory"),
        "analyze-zero-buckets": (["hpcc", "analyze", str(tmp_path / "file.txt"), "--buckets", "0"],
                                 "--buckets: `0` — allowed: 1 or more"),
        "analyze-binary-file": (["hpcc", "analyze", str(tmp_path / "bin.txt")], "not UTF-8 text"),
        "bench-missing-scenario": (["bench", str(tmp_path / "missing.yaml")], "missing.yaml"),
        "bench-zero-repeat": (["bench", "--repeat", "0"], "--repeat: `0` — allowed: 1 or more"),
        "convert-out-is-config": (["hpcc", "convert", cfg("c.txt"), "--out", str(tmp_path / "c.txt")],
                                  "is the config file"),
        "convert-out-dir-missing": (["hpcc", "convert", cfg("c.txt"), "--out", missing], "its directory"),
        "run-fct-output-is-dir": (["hpcc", "run", cfg("d.txt", FCT_OUTPUT_FILE=tmp_path)],
                                  "FCT_OUTPUT_FILE (line"),
        "run-fct-output-dir-missing": (["hpcc", "run", cfg("m.txt", FCT_OUTPUT_FILE=missing)], "does not exist"),
        "run-link-down-nan": (["hpcc", "run", cfg("n.txt", LINK_DOWN="nan 0 2")],
                              "the time must be a finite number of µs"),
        "report-out-is-dir": (["report", str(tmp_path), "--out", str(tmp_path)], "is a directory"),
        "plot-out-is-file": (["plot", str(tmp_path), "--out", str(tmp_path / "file.txt")], "is a file"),
    }[case]


CLI_CASES = ["traffic-zero-mean-cdf", "traffic-nan-cdf", "traffic-binary-cdf", "traffic-inf-time", "traffic-nan-base",
             "traffic-negative-base", "traffic-huge-bandwidth", "traffic-output-dir-missing", "traffic-output-is-dir",
             "analyze-zero-buckets", "analyze-binary-file", "bench-missing-scenario", "bench-zero-repeat",
             "convert-out-is-config", "convert-out-dir-missing", "run-fct-output-is-dir", "run-fct-output-dir-missing",
             "run-link-down-nan", "report-out-is-dir", "plot-out-is-file"]


@pytest.mark.parametrize("case", CLI_CASES)
def test_bad_command_arguments_and_files_get_a_message_not_a_traceback(tmp_path, examples, case):
    """Each of these hung, raised a traceback, ran a whole simulation before
    failing, overwrote an input, or was accepted (a fuzzing pass, 2026-11-27)."""
    args, message = _cli_case(tmp_path, examples, case)
    before = {p: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    r = rdmalab_cli(*args, timeout=120)
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    assert message in r.stderr, r.stderr
    if args[:2] == ["hpcc", "traffic"]:  # its arguments and CDF are no scenario
        assert "scenario refused" not in r.stderr, r.stderr
    assert {p: p.read_bytes() for p in before} == before, "an input was changed"
    assert not (tmp_path / "f.txt").exists() and not (tmp_path / "fct_output_file.txt").exists(), "nothing is written"


SMALL = ("duration: 50us\ntopology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps}}\n"
         "workload: {flows: [{src: h0, dst: h1, size: 4KB}]}\n")


def validate_text(tmp_path, text: str, name="s.yaml"):
    f = tmp_path / name
    f.write_text(text)
    r = rdmalab_cli("validate", str(f))
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_a_date_stays_text_and_a_binary_value_is_named(tmp_path):
    r = validate_text(tmp_path, "name: 2024-05-01\ndescription: 2024-05-01T10:00:00\n" + SMALL)
    assert r.returncode == 0, r.stderr
    assert rdmalab.load_scenario(tmp_path / "s.yaml").data["name"] == "2024-05-01"
    r = validate_text(tmp_path, "name: b\nseed: !!binary aGVsbG8=\n" + SMALL)
    assert r.returncode != 0 and "seed: `b'hello'` is a bytes" in r.stderr, r.stderr


@pytest.mark.parametrize("source,names", [
    # A symbol the runtime defines too: the linker's own message reaches the user.
    ('void doca_pcc_dev_printf(const char *f, ...) {}\n', "doca_pcc_dev_printf"),
    # No entry point: the build used to pass, and the run failed to load the library.
    ("", "doca_pcc_dev_user_algo"),
])
def test_a_c_controller_that_fails_to_link_shows_the_linker(tmp_path, source, names):
    from rdmalab import ccompile

    if ccompile.which() is None:
        pytest.skip("no C compiler")
    (tmp_path / "ctl.c").write_text('#include "rdmalab_cc.h"\n' + source)
    r = rdmalab_cli("cc", "build", str(tmp_path / "ctl.c"), env={**os.environ, "RDMALAB_CACHE": str(tmp_path / "c")})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "does not compile" in r.stderr and names in r.stderr, r.stderr


@pytest.mark.parametrize("name,says", [("scr-fig20a", "cannot be drawn from"), ("scr-fig11", "nothing to draw")])
def test_a_case_figure_without_its_data_says_so_after_the_run(tmp_path, name, says):
    f = tmp_path / "s.yaml"
    f.write_text(f"name: f\nfigures: [{name}]\n" + SMALL)
    r = rdmalab_cli("run", str(f), "--out", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"figure `{name}`" in r.stderr and says in r.stderr, r.stderr
    assert (tmp_path / "o" / "flows.csv").exists()


@pytest.mark.parametrize("column,values,says", [
    ("src", [["h0"], ["h2"]], "column `src` is List(String)"),
    ("tenant", ["a,b", "c"], "row 1, column `tenant`: `'a,b'` — a value may not hold a comma"),
    ("dst", ["h1", "h2\nh3"], "row 2, column `dst`"),
    ("src", ["#h0", "h2"], "row 1: `#h0` in column `src` — a row may not be empty or start with `#`"),
    # polars cannot cast a Duration to text: it raised its own error, uncaught.
    ("start", [datetime.timedelta(microseconds=5)] * 2,
     "column `start` is Duration(time_unit='us'); allowed: text, integer or float columns; write times as text"),
    ("start", [datetime.datetime(2026, 1, 1)] * 2, "column `start` is Datetime(time_unit='us', time_zone=None)"),
    ("size", [b"4KB", b"8KB"], "column `size` is Binary"),
])
def test_a_parquet_flow_file_whose_cells_would_not_survive_as_csv_is_refused(tmp_path, column, values, says):
    import polars as pl

    cols = {"src": ["h0", "h2"], "dst": ["h1", "h3"], "size": ["4KB", "8KB"]}
    cols[column] = values
    pl.DataFrame(cols).write_parquet(tmp_path / "flows.parquet")
    r = validate_text(tmp_path, "name: p\nduration: 50us\ntopology: {kind: single_switch, hosts: 4}\n"
                                "workload: {flow_file: flows.parquet}\n")
    assert r.returncode != 0 and says in r.stderr, r.stderr


def test_a_flow_file_with_a_byte_order_mark_reads_as_without(tmp_path):
    body = "src,dst,size\nh0,h1,4KB\nh2,h3,8KB\n"
    (tmp_path / "plain.csv").write_text(body)
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + body.encode())
    runs = []
    for name in ("plain", "bom"):
        f = tmp_path / f"{name}.yaml"
        f.write_text("name: b\nduration: 50us\n"
                     "topology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps, delay: 1us}}\n"
                     f"workload: {{flow_file: {name}.csv}}\n")
        r = rdmalab_cli("run", str(f), "--out", str(tmp_path / name), "--quiet")
        assert r.returncode == 0, r.stderr
        runs.append((tmp_path / name / "flows.csv").read_text())
    assert runs[0] == runs[1] and runs[0].count("\n") == 3


@pytest.mark.parametrize("cdf,says", [("0 0 7\n1000 100\n", "line 1 `0 0 7` must be `size_bytes cdf_percent`"),
                                      ("0 0\nnan 50\n1000 100\n", "line 2 `nan 50` — allowed: finite numbers")])
def test_a_cdf_file_line_must_be_two_finite_numbers(tmp_path, cdf, says):
    (tmp_path / "cdf.txt").write_text(cdf)
    r = validate_text(tmp_path, "name: c\nduration: 50us\ntopology: {kind: single_switch, hosts: 4}\n"
                                "workload: {poisson: {cdf: cdf.txt, load: 0.3}}\n")
    assert r.returncode != 0 and says in r.stderr, r.stderr


def test_an_ns3_topology_given_as_path_and_as_text_is_refused(tmp_path):
    (tmp_path / "t.txt").write_text("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n")
    r = validate_text(tmp_path, "name: t\nduration: 50us\ntopology: {kind: hpcc_file, path: t.txt, text: x}\n"
                                "workload: {flows: [{src: 0, dst: 1, size: 4KB}]}\n")
    assert r.returncode != 0 and "give exactly one of builtin, path or text" in r.stderr, r.stderr


def test_a_python_controller_class_that_is_no_controller_is_refused(tmp_path):
    r = validate_text(tmp_path, "name: c\ncc: {algorithm: python, class: 'builtins:dict'}\n" + SMALL)
    assert r.returncode != 0 and "`builtins:dict` has no on_event" in r.stderr, r.stderr


def test_flows_and_applications_that_start_too_late_are_warned_of(tmp_path):
    """They are valid (a sweep may cut a run short) but cannot complete."""
    f = tmp_path / "s.yaml"
    f.write_text("name: late\nduration: 50us\n"
                 "topology: {kind: single_switch, hosts: 4, host_link: {rate: 100Gbps, delay: 1us}}\n"
                 "workload:\n  flows:\n    - {src: h0, dst: h1, size: 4KB}\n"
                 "    - {src: h0, dst: h2, size: 4KB, start: 50us}\n    - {src: h1, dst: h2, size: 4KB, start: 1ms}\n"
                 "  perftest:\n    - {src: h2, dst: h3, message_size: 4KB, start: 60us}\n")
    r = rdmalab_cli("validate", f)
    assert r.returncode == 0, r.stderr
    assert "warning: 2 flows and 1 application start at or after the duration (50 µs)" in r.stderr, r.stderr
    r = rdmalab_cli("run", f, "--out", tmp_path / "o")
    assert r.returncode == 0 and "warning: 2 flows and 1 application start at or after" in r.stderr, r.stderr
    # --quiet drops the progress line, not the warning: one line, ours.
    r = rdmalab_cli("run", f, "--out", tmp_path / "o", "--quiet")
    late = [line for line in r.stderr.splitlines() if "start at or after" in line]
    assert r.returncode == 0 and late == [
        "rdmalab: warning: 2 flows and 1 application start at or after the duration (50 µs): "
        "they cannot complete; lengthen `duration` or move the starts"], r.stderr
    # From Python it is a warning of its own class.
    with pytest.warns(rdmalab.ScenarioWarning, match="2 flows and 1 application start at or after"):
        rdmalab.run(f)
    f.write_text(f.read_text().replace("duration: 50us", "duration: 2ms"))
    r = rdmalab_cli("validate", f)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_a_null_topology_path_is_absent_not_a_file_named_none(tmp_path):
    r = validate_text(tmp_path, "name: t\nduration: 50us\ntopology: {kind: hpcc_file, path: ~}\n"
                                "workload: {flows: [{src: 0, dst: 1, size: 4KB}]}\n")
    assert r.returncode != 0 and "hpcc_file needs exactly one of `builtin`" in r.stderr, r.stderr
    assert "None" not in r.stderr


def test_a_key_yaml_1_1_reads_as_a_boolean_keeps_its_name(tmp_path):
    # `on:` is `true` to YAML 1.1: `control.trigger.on` was refused as
    # `control.trigger.true: unknown key` although it is the documented key.
    from rdmalab import yamlio

    assert yamlio.load("trigger: {on: [ack], every: 2}\nyes: off\n") == {"trigger": {"on": ["ack"], "every": 2}, "yes": False}
    f = tmp_path / "t.yaml"
    f.write_text("name: t\nduration: 100us\n" + TOPO + "control:\n  trigger:\n    on: [ack, tx_last]\n    every: 2\n"
                 "workload: {perftest: [{src: h0, dst: h1, message_size: 4KiB}]}\n")
    r = rdmalab_cli("validate", str(f))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_refused_cc_header_is_not_reported_again_as_0b(tmp_path):
    # A too-large control.cc_header is refused as written; cc: homa's "needs
    # 8B or more" must not follow it naming a `0B` the user never gave.
    e = refused(tmp_path, "name: h\nduration: 1ms\n" + TOPO + "control: {placement: swcc, cc_header: 65B}\n"
                "cc: {algorithm: homa}\nworkload: {flows: [{src: h0, dst: h1, size: 10KB}]}\n")
    assert "control.cc_header: `65B` — allowed: 0B to 64B" in e, e
    assert "`0B`" not in e and "1 problem" in e, e


# h0, h1 on s3, h2 on s4; the fifth line is a second s3-s4 link.
HPCC_TOPO = ('topology: {kind: hpcc_file, text: "5 2 %d\\n3 4\\n0 3 100Gbps 1us 0\\n1 3 100Gbps 1us 0\\n'
             '2 4 100Gbps 1us 0\\n3 4 100Gbps 1us 0\\n3 4 100Gbps 1us 0\\n"}\n')
PERF = ("duration: 50us\n" + TOPO +
        "workload: {perftest: [{src: h0, dst: h1, message_size: 4KB%s}]}\n")
# Valid settings that do nothing with the rest of the scenario (a sweep may
# toggle the key they need, so they are warned of, not refused): the
# scenario, the warning (key, value, what it needs), and the key that gives
# it effect, which silences it.
#: Two 10 Gb/s senders into one receiver over 725 ns links, 2 KB frames, no CC.
SLOW_PFC = ("duration: 3ms\ntopology: {kind: single_switch, hosts: 3, host_link: {rate: 10Gbps, delay: 725ns}}\n"
            "nic: {mtu: 2048B}\ncc: {algorithm: none}\n"
            "workload: {flows: [{src: h0, dst: h2, size: 1MB}, {src: h1, dst: h2, size: 1MB}]}\n"
            "switch: {buffer: 1MiB, pfc: {enabled: true}}\n")


def test_the_headroom_warning_is_true(tmp_path):
    """Under the warned `auto` headroom a PFC run drops frames; with the
    headroom the warning asks for, the same run is lossless."""
    f = tmp_path / "s.yaml"
    f.write_text(SLOW_PFC)
    with pytest.warns(rdmalab.ScenarioWarning, match="switch.pfc.headroom"):
        short = rdmalab.run(f).summary
    f.write_text(SLOW_PFC.replace("{enabled: true}", "{enabled: true, headroom: 6104B}"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", rdmalab.ScenarioWarning)
        enough = rdmalab.run(f).summary
    assert short["pfc_pauses"] > 0 and short["dropped_frames"] > 0, short
    assert enough["pfc_pauses"] > 0 and enough["dropped_frames"] == 0, enough


INERT = [
    (PERF % ", cores: 4",
     "workload.perftest[0].cores: `4` — has no effect without host.uar",
     "host: {uar: {pages: 4}}\n"),
    (PERF % ", addresses: 8",
     "workload.perftest[0].addresses: `8` — has no effect unless nic.cc_scope is `destination` (here `qp`)",
     "nic: {cc_scope: destination}\n"),
    (PERF % "" + "nic: {cc_scope: pair}\ncc: {algorithm: none}\n",
     "nic.cc_scope: `pair` — has no effect with cc.algorithm none: the QPs it groups share a controller's rate, "
     "and no controller sets one; it takes effect with a cc.algorithm other than none (or a nic.window",
     "cc: {algorithm: dcqcn}\n"),
    # ns-3 reads the links its topology file counts and no more: a link added
    # without raising the count was left out of the network unsaid.
    ("duration: 50us\nworkload: {perftest: [{src: h0, dst: h2, message_size: 4KB}]}\n"
     + HPCC_TOPO % 4,
     "topology: `3 4 100Gbps 1us 0` — a link line after the 4 links the file's first line counts: not read, "
     "as ns-3 reads no further; raise the count to use it",
     HPCC_TOPO % 5),
    # ns-3's `auto` headroom (3 x rate x delay) is short of what a PAUSE lets
    # arrive on a slow, short link with large frames.
    (SLOW_PFC,
     "switch.pfc.headroom: `auto` — gives 2718 B at s0's port to h0 (10Gbps, 725ns); after a PAUSE up to "
     "6104 B more can arrive",
     "switch: {pfc: {headroom: 6104B}}\n"),
]


@pytest.mark.parametrize("text,said,fix", INERT, ids=["cores", "addresses", "pair", "uncounted-link", "headroom"])
def test_a_setting_that_does_nothing_here_is_warned_of(tmp_path, text, said, fix):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    r = rdmalab_cli("validate", f)
    assert r.returncode == 0 and f"s.yaml: warning: {said}" in r.stderr, r.stderr
    # Before the run, --quiet or not: one line, ours.
    r = rdmalab_cli("run", f, "--out", tmp_path / "o", "--quiet")
    lines = [line for line in r.stderr.splitlines() if said in line]
    assert r.returncode == 0 and len(lines) == 1 and lines[0].startswith("rdmalab: warning: "), r.stderr
    with pytest.warns(rdmalab.ScenarioWarning, match=re.escape(said)):
        rdmalab.run(f)
    assert said in " ".join(rdmalab.validate(f)["warnings"])
    # A sweep says it once, when it expands the runs, for the runs it holds in.
    (tmp_path / "sw.yaml").write_text("base: s.yaml\ngrid: {seed: [1, 2]}\n")
    r = rdmalab_cli("sweep", tmp_path / "sw.yaml", "--out", tmp_path / "sw", "--workers", "2", "--quiet")
    lines = [line for line in r.stderr.splitlines() if said in line]
    assert r.returncode == 0 and len(lines) == 1 and "2 of 2 runs: " in lines[0], r.stderr
    # With the key it needs, nothing to say.
    top = fix.split(":")[0]
    fixed = "\n".join(line for line in text.splitlines() if not line.startswith(top + ":")) + "\n" + fix
    f.write_text(fixed)
    r = rdmalab_cli("validate", f)
    assert r.returncode == 0 and "warning" not in r.stderr, fixed + r.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error", rdmalab.ScenarioWarning)
        rdmalab.run(f)


def test_a_cc_scope_is_not_warned_of_where_it_acts(tmp_path, examples):
    """A Python controller (the core is given `none` for it) or a window the
    group shares gives a CC group something to share; even with a window, a
    `destination` group (the rate not split) is warned of as `pair` is."""
    aimd = examples / "controllers" / "aimd.py"
    f = tmp_path / "s.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("error", rdmalab.ScenarioWarning)
        for nic, cc in [("{cc_scope: pair}", f"{{algorithm: python, class: '{aimd}:HalveOnCnp'}}"),
                        ("{cc_scope: pair, window: bdp}", "{algorithm: none}"),
                        ("{cc_scope: tenant, window: 64KB}", "{algorithm: none}")]:
            text = (PERF % ", tenant: t") + f"nic: {nic}\ncc: {cc}\n"
            text = text.replace("workload: {", "workload: {tenants: {t: {hosts: [h0]}}, ")
            f.write_text(text)
            assert rdmalab.validate(f)["warnings"] == [], text
            rdmalab.run(f)
    f.write_text(PERF % "" + "nic: {cc_scope: destination, window: bdp}\ncc: {algorithm: none}\n")
    assert rdmalab.validate(f)["warnings"] == [
        "nic.cc_scope: `destination` — has no effect with cc.algorithm none: the QPs it groups share a "
        "controller's rate, and no controller sets one; it takes effect with a cc.algorithm other than none"]


def test_a_sweep_that_toggles_the_key_a_setting_needs_is_not_warned_of(tmp_path):
    """Why these are warnings, not refusals: a grid over cc × nic.cc_scope
    (the attacks' "no CC" baseline) gives `pair` effect in its dcqcn runs.
    A setting that takes effect in no run of the sweep is still told, once."""
    (tmp_path / "s.yaml").write_text(PERF % ", cores: 4")
    (tmp_path / "sw.yaml").write_text(
        "base: s.yaml\ngrid:\n  cc: {dcqcn: {algorithm: dcqcn}, none: {algorithm: none}}\n"
        "  nic.cc_scope: [qp, pair]\n  host.uar: {off: null, on: {pages: 4}}\n")
    r = rdmalab_cli("sweep", tmp_path / "sw.yaml", "--out", tmp_path / "o", "--dry-run")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    (tmp_path / "sw.yaml").write_text(
        "base: s.yaml\ngrid:\n  cc: {none: {algorithm: none}}\n  nic.cc_scope: [qp, pair]\n")
    r = rdmalab_cli("sweep", tmp_path / "sw.yaml", "--out", tmp_path / "o", "--dry-run")
    said = [line for line in r.stderr.splitlines() if "warning" in line]
    assert r.returncode == 0 and len(said) == 2, r.stderr
    assert said[0].startswith("rdmalab: warning: 2 of 2 runs: workload.perftest[0].cores: `4` — "), said
    assert said[1].startswith("rdmalab: warning: 1 of 2 runs: nic.cc_scope: `pair` — "), said
    assert said[1].endswith("first: run 1 (cc=none, nic.cc_scope=pair)"), said


def test_output_names_no_file_system_takes_and_absurd_thread_counts_are_refused_up_front(tmp_path, examples):
    """A name over 255 bytes in an output path, and a thread count past what
    argparse can hand the core, are refused naming the option, not with a
    raw OSError or OverflowError from deep inside."""
    long = "a" * 256
    scenario = examples / "dumbbell-dcqcn.yaml"
    for args in (("run", scenario, "--out", tmp_path / long),
                 ("sweep", examples / "cc-comparison-sweep.yaml", "--out", tmp_path / long / "x"),
                 ("report", scenario.parent, "--out", tmp_path / (long + ".html"))):
        r = rdmalab_cli(*args)
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
        assert "is 256 bytes long; allowed: names of at most 255 bytes" in r.stderr or \
            "is 261 bytes long; allowed: names of at most 255 bytes" in r.stderr, r.stderr
    r = rdmalab_cli("run", scenario, "--out", tmp_path / "o", "--threads", str(2**64))
    assert r.returncode == 2 and "--threads: `18446744073709551616` — allowed: 1 to 1024" in r.stderr, r.stderr


def test_a_non_utf8_set_and_an_endless_traffic_base_are_refused_in_words(tmp_path, examples):
    r = subprocess.run([sys.executable, "-m", "rdmalab", "run", str(examples / "dumbbell-dcqcn.yaml"), "--out",
                        str(tmp_path / "o"), "--set", os.fsdecode(b"duration=\xff")], capture_output=True)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2 and "--set `duration=\\xff`: not UTF-8 text" in err and "Traceback" not in err, err
    r = rdmalab_cli("hpcc", "traffic", "-c", "websearch", "-n", "4", "-o", tmp_path / "t.txt", "--base", "1e300")
    assert r.returncode == 2 and "--base: `1e300` — allowed: at most 1e+09" in r.stderr, r.stderr
