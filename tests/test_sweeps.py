"""Sweeps: expansion and refusal, identical results across backends and worker
counts, resume after a kill, failed runs, the SLURM export."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import rdmalab_cli

from rdmalab import ccompile
from rdmalab.sweep import Results, Store, load_results, load_sweep, sweep_from_dict
from rdmalab.sweep.spec import SWEEP_KEYS
from rdmalab.sweep.store import RECORD_FIELDS

TABLES = ("flows", "qp_samples", "port_samples", "pfc_events", "drops", "apps")


def manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def run_digests(out: Path) -> dict:
    """sha256 of every output file of every run, except run.json (timings)."""
    return {
        f"{d.name}/{f.name}": hashlib.sha256(f.read_bytes()).hexdigest()
        for d in sorted((out / "runs").iterdir()) if not d.name.startswith(".")
        for f in sorted(d.iterdir()) if f.name != "run.json"
    }


def test_expansion_order_labels_and_parameters(sweep12):
    sweep = load_sweep(sweep12)
    assert len(sweep.runs) == 12 and sweep.shape() == "3 × 2 × 2"
    assert sweep.param_names == ["cc", "workload.poisson.load", "seed"]
    assert [r.params for r in sweep.runs[:3]] == [
        {"cc": "dcqcn", "workload.poisson.load": 0.1, "seed": 1},
        {"cc": "dcqcn", "workload.poisson.load": 0.1, "seed": 2},
        {"cc": "dcqcn", "workload.poisson.load": 0.3, "seed": 1},
    ]
    last = sweep.runs[-1].scenario.data
    assert last["cc"] == {"algorithm": "dcqcn", "params": {"rate_ai": "20Gbps"}}
    assert last["workload"]["poisson"]["load"] == 0.3 and last["seed"] == 2 and last["duration"] == "2ms"
    assert len({r.run_id for r in sweep.runs}) == 12


def test_zip_groups_vary_together_and_null_removes_a_key(examples):
    sweep = sweep_from_dict({
        "base": str(examples / "dumbbell-dcqcn.yaml"),
        "zip": [{"duration": ["1ms", "2ms"], "records.sample_interval": ["10us", None]}],
        "seeds": {"first": 5, "count": 2},
    })
    assert [(r.params["duration"], r.params["records.sample_interval"], r.params["seed"]) for r in sweep.runs] == [
        ("1ms", "10us", 5), ("1ms", "10us", 6), ("2ms", None, 5), ("2ms", None, 6)]
    assert "sample_interval" not in sweep.runs[2].scenario.data["records"]


MALFORMED = {
    "unknown axis key": ("grid: {cc.algoritm: [dcqcn, none]}",
                         ["cc.algoritm: unknown key; allowed here: algorithm, params", "from grid `cc.algoritm`"]),
    "unknown nested axis key": ("grid: {topology.host_link.speed: [10Gbps]}",
                                ["topology.host_link.speed: unknown key", "from grid `topology.host_link.speed`"]),
    "value the scenario refuses": ("grid: {cc.algorithm: [dcqcn, tcp]}",
                                   ["cc.algorithm: `tcp` — allowed: none, dcqcn, timely", "in 1 run, first: cc.algorithm=tcp"]),
    "a YAML true where a number goes": ("grid: {seed: [true, 2]}",
                                        ["seed: `true` — allowed: an integer", "in 1 run, first: seed=true"]),
    "empty axis": ("grid: {workload.poisson.load: []}", ["grid `workload.poisson.load`: empty axis"]),
    "index into a list the base lacks": ("grid: {\"workload.flows[0].size\": [1KB, 2KB]}",
                                         ["`workload.flows[0].size` indexes `workload.flows`, which the scenario "
                                          "does not have; set the whole list instead (`workload.flows: [...]`)"]),
    "empty seeds": ("seeds: []", ["seeds: empty axis"]),
    "same key twice": ("grid: {duration: [1ms, 2ms]}\nzip: [{duration: [1ms, 3ms], seed: [1, 2]}]",
                       ["`duration` is given conflicting values by both grid `duration` and zip[0]"]),
    "key inside another": ("grid: {cc: [{algorithm: none}], cc.params.rate_ai: [1Gbps]}",
                           ["`cc` (grid `cc`) and `cc.params.rate_ai` (grid `cc.params.rate_ai`) conflict"]),
    "seed and seeds": ("set: {seed: 3}\nseeds: [1, 2]", ["`seed` is given conflicting values by both set `seed` and seeds"]),
    "zip lengths differ": ("zip: [{duration: [1ms, 2ms], seed: [1]}]",
                           ["zip[0]: the lists of a zip group must be equally long; `duration` has 2, `seed` has 1"]),
    "repeated value": ("grid: {workload.poisson.load: [0.1, 0.1]}", ["the value `0.1` appears twice"]),
    "repeated zip combination": ("zip: [{duration: [1ms, 1ms, 2ms], seed: [1, 1, 1]}]",
                                 ["zip[0]: the combination (duration=1ms, seed=1) appears twice"]),
    "unknown sweep key": ("grids: {duration: [1ms]}", ["grids: unknown sweep key; allowed: name,"]),
    "index out of range": ("grid:\n  workload.perftest[9].message_size: [1KB]",
                           ["`workload.perftest` has 4 items (indices 0 to 3)"]),
    "values that read alike": ("grid: {workload.poisson.load: [1, 1.0]}",
                               ["grid `workload.poisson.load`: `1` and `1.0` read the same in the results (`1.0`)"]),
    "text that reads as a number": ("zip: [{workload.poisson.load: [0.5, '0.5'], seed: [1, 1]}]",
                                    ["zip[0]: `0.5`, `1` and `\"0.5\"`, `1` read the same in the results"]),
    "one duration written two ways": ("grid: {duration: [100us, 0.0001s]}",
                                      ["grid `duration`: `100us` and `0.0001s` are one setting written two ways — "
                                       "for `duration`, `100us` and `0.0001s` both mean 100 µs (100000000 ps)"]),
    "one rate written two ways": ("grid: {topology.host_link.rate: [100Gbps, 25Gbps, 100000Mbps]}",
                                  ["grid `topology.host_link.rate`: `100Gbps` and `100000Mbps` are one setting "
                                   "written two ways — for `topology.host_link.rate`, `100Gbps` and `100000Mbps` "
                                   "both mean 100 Gbit/s (100000000000 bit/s)"]),
    "one size written two ways": ("grid:\n  workload.perftest[0].message_size: [1KiB, 1024B]",
                                  ["grid `workload.perftest[0].message_size`: `1KiB` and `1024B` are one setting",
                                   "both mean 1.02 KB (1024 B)"]),
    "a labelled value written two ways": ("grid:\n  cc:\n    slow: {algorithm: dcqcn, params: {rate_ai: 200Mbps}}\n"
                                          "    fast: {algorithm: dcqcn, params: {rate_ai: 0.2Gbps}}",
                                          ["grid `cc`: labelled `slow` and labelled `fast` are one setting written "
                                           "two ways — for `cc.params.rate_ai`, `200Mbps` and `0.2Gbps` both mean "
                                           "200 Mbit/s (200000000 bit/s)"]),
    "a zip combination written two ways": ("zip: [{duration: [1ms, 1000us], seed: [1, 1]}]",
                                           ["zip[0]: (duration=`1ms`, seed=`1`) and (duration=`1000us`, seed=`1`) "
                                            "are one setting written two ways — for `duration`, `1ms` and `1000us` "
                                            "both mean 1 ms (1000000000 ps)"]),
    "labels that read alike": ("grid:\n  cc:\n    1: {algorithm: dcqcn}\n    '1': {algorithm: none}",
                               ["grid `cc`: the labels `1` and `\"1\"` are both `1` in the results"]),
    "seed past u64": ("seeds: [1, 18446744073709551616]",
                      ["seeds: `18446744073709551616` — allowed: whole numbers from 0 to 18446744073709551615"]),
    "seeds running past u64": ("seeds: {first: 18446744073709551615, count: 2}",
                               ["seeds.first: `18446744073709551615` — allowed: at most 18446744073709551614"]),
    "set not a mapping": ("set: []", ["set: `[]` — allowed: a mapping from scenario keys to values"]),
    "name not text": ("name: [a, b]", ["name: `['a', 'b']` — allowed: text"]),
    "not a key": ("grid: {'cc..x': [1]}", ["grid `cc..x`: `cc..x` is not a scenario key"]),
}


def test_a_sweep_file_as_base_is_named_as_such(sweep12, tmp_path):
    path = tmp_path / "outer.yaml"
    path.write_text(f"base: {sweep12}\nseeds: [1, 2]\n")
    r = rdmalab_cli("sweep", path, "--out", tmp_path / "out")
    assert r.returncode == 2 and f"base: `{sweep12}` is a sweep file (it has `base`); allowed: a scenario file" \
        in r.stderr, r.stderr


def test_a_zip_list_may_repeat_a_value_when_the_combinations_differ(tmp_path, examples):
    spec = {"base": str(examples / "dumbbell-dcqcn.yaml"),
            "zip": {"duration": ["1ms", "1ms", "2ms"], "seed": [1, 2, 1]}}
    sweep = sweep_from_dict(spec, check=False)
    assert [r.params for r in sweep.runs] == [{"duration": "1ms", "seed": 1}, {"duration": "1ms", "seed": 2},
                                              {"duration": "2ms", "seed": 1}]


def test_text_that_reads_as_a_quantity_is_kept_apart_where_the_key_is_text(examples):
    # Only a key the core reads as a quantity makes two spellings one setting:
    # `name` is text, so `10us` and `10000ns` are two names.
    sweep = sweep_from_dict({"base": str(examples / "dumbbell-dcqcn.yaml"),
                             "grid": {"name": ["10us", "10000ns"], "records.sample_interval": ["10us", "20000ns"]}})
    assert [list(r.params.values()) for r in sweep.runs] == [["10us", "10us"], ["10us", "20000ns"],
                                                             ["10000ns", "10us"], ["10000ns", "20000ns"]]


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_sweeps_are_refused_before_any_run(case, tmp_path, examples):
    body, messages = MALFORMED[case]
    path = tmp_path / "bad-sweep.yaml"
    path.write_text(f"base: {examples / 'dumbbell-dcqcn.yaml'}\n{body}\n")
    out = tmp_path / "out"
    r = rdmalab_cli("sweep", path, "--out", out)
    assert r.returncode == 2, r.stderr
    assert "sweep refused, nothing was run" in r.stderr
    for m in messages:
        assert m in r.stderr, r.stderr
    assert not out.exists(), "a refused sweep must not create its output directory"
    v = rdmalab_cli("validate", path)
    assert v.returncode == 1 and messages[0] in v.stderr


def test_identical_results_across_backends_and_worker_counts(sweep12, local_sweep, tmp_path):
    outs = {"local, 2 workers": local_sweep}
    for label, args in {"local, 1 worker": ["--workers", 1], "ray, 2 CPUs": ["--backend", "ray", "--workers", 2]}.items():
        out = tmp_path / label.replace(" ", "").replace(",", "-")
        r = rdmalab_cli("sweep", sweep12, "--out", out, "--quiet", *args)
        assert r.returncode == 0, r.stderr
        assert "12 of 12 runs done (12 run now, 0 finished before), 0 failed" in r.stdout
        outs[label] = out

    ref = outs["local, 2 workers"]
    rows = manifest(ref)
    assert len(rows) == 12 and len({r["run_id"] for r in rows}) == 12
    assert {r["status"] for r in rows} == {"done"}
    flows = load_results(ref, "flows")
    assert flows.height > 100 and flows.columns[:4] == ["run_id", "cc", "workload.poisson.load", "seed"]
    assert sorted(flows["cc"].unique()) == ["dcqcn", "dcqcn-ai20", "none"]
    for label, out in outs.items():
        assert [(r["run_id"], r["params"]) for r in manifest(out)] == [(r["run_id"], r["params"]) for r in rows]
        assert {r["backend"] for r in manifest(out)} == {"ray" if "ray" in label else "local"}
        assert run_digests(out) == run_digests(ref), label
        for t in TABLES:
            assert load_results(out, t).equals(load_results(ref, t)), (label, t)
        assert Results(out).summaries().equals(Results(ref).summaries()), label

    # The axes really reach the runs: each run's scenario has its setting, and the settings differ in outcome.
    for row in rows:
        sc = json.loads((ref / row["run_dir"] / "scenario.json").read_text())
        assert sc["seed"] == row["params"]["seed"]
        assert sc["workload"]["poisson"]["load"] == row["params"]["workload.poisson.load"]
    by_cc = {cc: g.drop("run_id", "cc") for (cc,), g in
             load_results(ref, "qp_samples").partition_by("cc", as_dict=True).items()}
    assert not by_cc["dcqcn"].equals(by_cc["none"]) and not by_cc["dcqcn"].equals(by_cc["dcqcn-ai20"])


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_killed_sweep_resumes_with_the_remaining_runs_only(sig, sweep12, local_sweep, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "rdmalab", "sweep", str(sweep12), "--out", str(out),
                             "--workers", "2", "--quiet"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            done = sum(r["status"] == "done" for r in manifest(out))
        except (FileNotFoundError, json.JSONDecodeError):
            done = 0
        if done >= 3:
            break
        time.sleep(0.02)
    # SIGKILL: the sweep and its workers die at once (a lost machine). SIGINT: Ctrl-C at a terminal.
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    finished = {d.name: (d / "run.json").stat().st_mtime_ns
                for d in (out / "runs").iterdir() if (d / "run.json").exists()}
    assert 3 <= len(finished) < 12, "the kill must land midway"
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:  # stopped cleanly, with a manifest that lists exactly the finished runs
        assert proc.returncode == 130 and "Run the same command again" in err
        assert {r["run_id"] for r in manifest(out) if r["status"] == "done"} == set(finished)
    r = rdmalab_cli("sweep", sweep12, "--out", out, "--workers", 2)
    assert r.returncode == 0, r.stderr
    assert f"{len(finished)} done before, 0 failed before, {12 - len(finished)} to run" in r.stderr
    assert f"({12 - len(finished)} run now, {len(finished)} finished before)" in r.stdout
    for run_id, mtime in finished.items():  # nothing finished was run again
        assert (out / "runs" / run_id / "run.json").stat().st_mtime_ns == mtime
    rows = manifest(out)
    assert sorted(r["run_id"] for r in rows) == sorted(r["run_id"] for r in manifest(local_sweep))
    assert len({r["run_id"] for r in rows}) == 12 and {r["status"] for r in rows} == {"done"}
    assert not any((out / "runs" / ".work").iterdir()), "work directories of killed runs are cleaned up"
    assert run_digests(out) == run_digests(local_sweep)


def test_ctrl_c_stops_a_sweep_whose_run_is_stuck_in_a_c_controller(tmp_path):
    """A run that never ends (a C controller in an endless loop) must not keep
    the sweep from acting on Ctrl-C: it stops at once with status 130, and its
    workers are gone."""
    src = tmp_path / "loop.c"
    src.write_text("#include <rdmalab_cc.h>\n#include <stdio.h>\n"
                   "void doca_pcc_dev_user_init(uint32_t *d) { (void)d; }\n"
                   "void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *c, doca_pcc_dev_event_t *e,\n"
                   "    const doca_pcc_dev_attr_t *a, doca_pcc_dev_results_t *r) {\n"
                   "    (void)c; (void)e; (void)a; (void)r;\n"
                   "    fputs(\"looping\\n\", stderr); fflush(stderr);\n"
                   "    for (volatile unsigned long i = 0;; i++) {}\n}\n")
    path = tmp_path / "stuck-sweep.yaml"
    path.write_text(textwrap.dedent(f"""\
        base:
          duration: 1ms
          topology: {{kind: single_switch, hosts: 2, host_link: {{rate: 100Gbps, delay: 1us}}}}
          cc: {{algorithm: c, source: {src}}}
          workload: {{flows: [{{src: h0, dst: h1, size: 100KB}}]}}
        seeds: [1, 2]
        """))
    proc = subprocess.Popen([sys.executable, "-m", "rdmalab", "sweep", str(path), "--out", str(tmp_path / "out"),
                             "--workers", "1", "--quiet"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()  # the worker's, once its run is in the loop
        assert first == "looping\n", first + proc.stderr.read()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at a terminal
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("Ctrl-C did not stop a sweep whose run is stuck")
        assert proc.returncode == 130 and "sweep interrupted" in err, err
        time.sleep(0.5)
        # No worker is left in the loop: nothing of the sweep's session runs (a zombie waits for init only).
        ps = subprocess.run(["ps", "-o", "stat=,args=", "-s", str(proc.pid)], capture_output=True, text=True)
        assert not [ln for ln in ps.stdout.splitlines() if not ln.startswith("Z")], ps.stdout
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def test_a_failed_run_records_its_error_and_the_others_finish(tmp_path, examples):
    path = tmp_path / "fail-sweep.yaml"
    path.write_text(f"base: {examples / 'dumbbell-dcqcn.yaml'}\nset: {{duration: 1ms}}\n"
                    "grid: {max_events: [2000, 100000000]}\nseeds: [1, 2]\n")
    out = tmp_path / "out"
    r = rdmalab_cli("sweep", path, "--out", out, "--workers", 2)
    assert r.returncode == 1
    assert "2 of 4 runs done (4 run now, 0 finished before), 2 failed" in r.stdout
    rows = manifest(out)
    assert [r["status"] for r in rows] == ["failed", "failed", "done", "done"]
    assert all("RunError" in r["error"] and "max_events = 2000" in r["error"] for r in rows[:2])
    assert all(r["error"] is None for r in rows[2:])
    # Analysis leaves the failed runs out, and says so: their setting is in no table or plot.
    for cmd in (["analyze", out], ["plot", out, "--out", tmp_path / "plots"], ["report", out]):
        r = rdmalab_cli(*cmd)
        assert r.returncode == 0, r.stderr
        assert "warning: 2 of 4 runs left out (2 failed), first: run 0 max_events=2000, seed=1" in r.stderr, cmd
    again = rdmalab_cli("sweep", path, "--out", out)
    assert "2 done before, 2 failed before, 0 to run" in again.stderr
    retry = rdmalab_cli("sweep", path, "--out", out, "--retry-failed")
    assert "2 done before, 0 failed before, 2 to run" in retry.stderr
    assert len(manifest(out)) == 4
    assert load_results(out, "flows")["max_events"].unique().to_list() == [100000000]


def test_runs_of_another_build_are_neither_reused_nor_rerun_unannounced(tmp_path, examples):
    # A run's id hashes its scenario, not the simulator: after rdmalab changes, a
    # resumed sweep must say that old results are there, and do what it is told.
    path = tmp_path / "build-sweep.yaml"
    path.write_text(f"base: {examples / 'dumbbell-dcqcn.yaml'}\nset: {{duration: 300us}}\nseeds: [1, 2, 3]\n")
    out = tmp_path / "out"
    assert rdmalab_cli("sweep", path, "--out", out, "--workers", 1, "--quiet").returncode == 0
    here = manifest(out)[0]["rdmalab_build"]
    assert {r["rdmalab_build"] for r in manifest(out)} == {here}
    # Made by another build: one that recorded itself, one from before builds were recorded.
    dirs = [out / r["run_dir"] for r in manifest(out)]
    for d, build in ((dirs[0], "0123456789abcdef-0123456789ab"), (dirs[1], None)):
        rec = json.loads((d / "run.json").read_text())
        rec.pop("rdmalab_build")
        if build:
            rec["rdmalab_build"] = build
        (d / "run.json").write_text(json.dumps(rec))
    stamps = {d: (d / "run.json").stat().st_mtime_ns for d in dirs}
    r = rdmalab_cli("sweep", path, "--out", out, "--quiet")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert (f"holds 2 finished runs of this sweep made by another build of rdmalab: "
            f"0123456789abcdef-0123456789ab (1), not recorded (1); this one is {here}.") in r.stderr, r.stderr
    assert "--rerun-other-builds" in r.stderr and "--keep-other-builds" in r.stderr
    assert {d: (d / "run.json").stat().st_mtime_ns for d in dirs} == stamps, "nothing was run or removed"
    # Kept: nothing runs, and reading the results says they are mixed.
    r = rdmalab_cli("sweep", path, "--out", out, "--quiet", "--keep-other-builds")
    assert r.returncode == 0 and "(0 run now, 3 finished before)" in r.stdout, r.stdout + r.stderr
    a = rdmalab_cli("analyze", out)
    assert a.returncode == 0, a.stderr
    assert ("warning: the runs were made by 3 builds of rdmalab, whose results may differ: "
            f"0123456789abcdef-0123456789ab (1), {here} (1), not recorded (1)") in a.stderr, a.stderr
    # Rerun: the two run again with this build; the third is left as it was.
    r = rdmalab_cli("sweep", path, "--out", out, "--quiet", "--rerun-other-builds")
    assert r.returncode == 0 and "(2 run now, 1 finished before)" in r.stdout, r.stdout + r.stderr
    assert {r["rdmalab_build"] for r in manifest(out)} == {here}
    assert (dirs[2] / "run.json").stat().st_mtime_ns == stamps[dirs[2]]
    assert "builds of rdmalab" not in rdmalab_cli("analyze", out).stderr
    both = rdmalab_cli("sweep", path, "--out", out, "--rerun-other-builds", "--keep-other-builds")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


@pytest.mark.filterwarnings("ignore:1 of 1 runs cannot complete")
def test_a_worker_of_another_build_stops_the_sweep(tmp_path, examples, monkeypatch):
    # The workers import rdmalab afresh: one reinstalled meanwhile is another build.
    from rdmalab.sweep import OtherBuilds, runners

    sweep = sweep_from_dict({"base": str(examples / "dumbbell-dcqcn.yaml"), "set": {"duration": "300us"},
                             "seeds": [1]})
    monkeypatch.setattr(runners, "build_id", lambda: "fedcba9876543210-ba9876543210")
    with pytest.raises(OtherBuilds, match=r"run 0 \(\w+\) was made by build \w+-\w+ of rdmalab, but this sweep "
                                          r"started with build fedcba9876543210-ba9876543210"):
        runners.run_sweep(sweep, tmp_path / "out", workers=1, progress=False)


def test_a_build_is_named_by_the_package_files_but_not_caches_or_the_compiled_core(tmp_path):
    import rdmalab
    from rdmalab import build

    pkg = tmp_path / "rdmalab"
    shutil.copytree(Path(rdmalab.__file__).parent, pkg)
    first = build.front_fingerprint(pkg)
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "x.pyc").write_bytes(b"cache")
    for so in pkg.glob("_core*"):
        so.write_bytes(b"rebuilt from the same sources")
    assert build.front_fingerprint(pkg) == first
    (pkg / "sweep" / "spec.py").write_text((pkg / "sweep" / "spec.py").read_text() + "\n# an edit\n")
    assert build.front_fingerprint(pkg) != first
    assert build.build_id() == f"{rdmalab._core.__build__}-{build.front_fingerprint(Path(rdmalab.__file__).parent)}"
    assert len(rdmalab._core.__build__) == 16 and int(rdmalab._core.__build__, 16) >= 0


def test_a_run_directory_without_its_record_is_run_again_and_replaced(tmp_path, examples):
    path = tmp_path / "rec-sweep.yaml"
    path.write_text(f"base: {examples / 'dumbbell-dcqcn.yaml'}\nset: {{duration: 300us}}\nseeds: [1, 2]\n")
    out = tmp_path / "out"
    assert rdmalab_cli("sweep", path, "--out", out, "--workers", 1, "--quiet").returncode == 0
    first = out / manifest(out)[0]["run_dir"]
    (first / "run.json").unlink()
    (first / "flows.csv").unlink()
    r = rdmalab_cli("sweep", path, "--out", out, "--workers", 1, "--quiet")
    assert r.returncode == 0 and "(1 run now, 1 finished before)" in r.stdout, r.stdout + r.stderr
    assert (first / "run.json").exists() and (first / "flows.csv").exists(), "the new run replaces the remains"
    assert "(0 run now, 2 finished before)" in rdmalab_cli("sweep", path, "--out", out, "--quiet").stdout
    # A run.json that is not rdmalab's: refused, naming the file, not a traceback.
    for bad in ("{bad", '{"status": "finished"}', "[]"):
        (first / "run.json").write_text(bad)
        r = rdmalab_cli("sweep", path, "--out", out, "--quiet")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert f"{first / 'run.json'} is not the run record rdmalab writes" in r.stderr, r.stderr
        assert f"delete {first} (the sweep then runs it again)" in r.stderr


def _edit_manifest(out: Path, edit) -> None:
    rows = manifest(out)
    edit(rows)
    (out / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("edit, message", [
    (lambda rows: rows.__setitem__(1, rows[0]), "run 2 of 12: run `{id0}` is listed twice"),
    (lambda rows: rows[0].pop("status"), "run 1 of 12: `status` is `null` — allowed: pending, done, failed"),
    (lambda rows: rows[0]["params"].pop("seed"), "run 1 of 12: `params` is `{{\"cc\": \"dcqcn\", "
                                                 "\"workload.poisson.load\": 0.1}}` — allowed: a mapping of the "
                                                 "sweep's parameters (cc, workload.poisson.load, seed)"),
    (lambda rows: rows[0].update(run_dir="../.."), "run 1 of 12: `run_dir` is `\"../..\"` — allowed: runs/{id0}"),
])
def test_a_hand_edited_manifest_is_refused_not_counted_twice(edit, message, local_sweep, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(local_sweep, out)
    id0 = manifest(out)[0]["run_id"]
    _edit_manifest(out, edit)
    r = rdmalab_cli("analyze", out)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{out / 'manifest.jsonl'}: " + message.format(id0=id0) in r.stderr, r.stderr
    assert "run `rdmalab sweep SWEEP.yaml --out DIR` on it again" in r.stderr


def test_an_unknown_table_is_named_with_the_tables_there_are(local_sweep):
    with pytest.raises(KeyError, match="has a table `flow`; allowed: flows, qp_samples, port_samples"):
        Results(local_sweep).table("flow")


def test_slurm_export_writes_an_array_job_that_fills_the_store(tmp_path, examples):
    path = tmp_path / "hpc-sweep.yaml"
    path.write_text(f"base: {examples / 'dumbbell-dcqcn.yaml'}\nset: {{duration: 1ms}}\n"
                    "grid: {cc.algorithm: [dcqcn, none]}\nseeds: [1, 2]\n")
    out = tmp_path / "out"
    r = rdmalab_cli("sweep", path, "--out", out, "--backend", "slurm", "--sbatch=--partition=short")
    assert r.returncode == 0, r.stderr
    script = out / "slurm" / "sweep.sbatch"
    text = script.read_text()
    assert "#SBATCH --array=0-3\n" in text and "#SBATCH --partition=short\n" in text
    assert not (out / "runs").exists() or not any((out / "runs").iterdir()), "export runs nothing"
    for task in range(4):  # what the array tasks would do on the cluster
        t = subprocess.run(["bash", str(script)], env={**os.environ, "SLURM_ARRAY_TASK_ID": str(task)},
                           capture_output=True, text=True)
        assert t.returncode == 0, t.stderr
    r = rdmalab_cli("sweep", path, "--out", out)
    assert "4 done before, 0 failed before, 0 to run" in r.stderr
    assert {r["backend"] for r in manifest(out)} == {"slurm"}
    for index in (-1, 4):  # not Python's indexing: -1 is no run
        t = rdmalab_cli("sweep-task", out, index)
        assert t.returncode == 1 and "Traceback" not in t.stderr, t.stderr
        assert f"sweep-task: INDEX `{index}` — allowed: 0 to 3, the runs of" in t.stderr, t.stderr


@pytest.mark.parametrize("name", ["evil\necho INJECTED", "tab\there", "cr\rhere"])
def test_a_sweep_name_must_be_one_line(tmp_path, examples, name):
    """A line break in the name went into the SLURM script as it was: the
    rest of the name ran as a command and the #SBATCH lines after it were
    ignored."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: {json.dumps(name)}\nbase: {examples / 'dumbbell-dcqcn.yaml'}\n"
                    "grid: {cc.algorithm: [dcqcn, none]}\n")
    r = rdmalab_cli("sweep", path, "--out", tmp_path / "out", "--backend", "slurm")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert f"name: {name!r} holds a line break or another control character — allowed: text on one line" \
        in r.stderr, r.stderr
    assert not (tmp_path / "out" / "slurm" / "sweep.sbatch").exists()


def test_files_named_in_the_sweep_are_read_beside_the_sweep_file(tmp_path, examples):
    """A controller or CDF file beside the sweep file, named in `grid` or
    `set`, was looked for beside the base scenario (in examples/); paths
    inside the base stay the base's."""
    sw = tmp_path / "sw"
    sw.mkdir()
    (sw / "my_cc.py").write_text("from rdmalab import Controller\n"
                                 "class Fixed(Controller):\n"
                                 "    def on_event(self, ev, ctx):\n        pass\n")
    (sw / "mycdf.txt").write_text("1000 0\n4000 100\n")
    (sw / "s.yaml").write_text(
        f"base: {examples / 'dumbbell-dcqcn.yaml'}\n"
        "set: {duration: 200us, workload.poisson.cdf: mycdf.txt}\n"
        "grid: {cc: {dcqcn: {algorithm: dcqcn}, mine: {algorithm: python, class: my_cc.py:Fixed}}}\n")
    r = rdmalab_cli("sweep", sw / "s.yaml", "--out", tmp_path / "out", "--quiet")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    rows = manifest(tmp_path / "out")
    assert [row["status"] for row in rows] == ["done", "done"], rows
    assert {row["params"]["cc"] for row in rows} == {"dcqcn", "mine"}
    # A built-in CDF's name and a module's class are not file names.
    from rdmalab.sweep.spec import _from_sweep_dir
    for key, v in ((["workload", "poisson", "cdf"], "websearch"), (["cc", "class"], "mypkg.cc:MyCC")):
        assert _from_sweep_dir(key, v, sw, examples) == v
    assert _from_sweep_dir(["cc"], {"class": "a.py:X"}, sw, examples) == {"class": f"{sw / 'a.py'}:X"}
    assert _from_sweep_dir(["cc"], {"class": "a.py:X"}, examples, examples) == {"class": "a.py:X"}


def test_a_sweep_name_becomes_a_slurm_job_name_of_one_word(tmp_path, examples):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: DCQCN vs. none (µ-test)\nbase: {examples / 'dumbbell-dcqcn.yaml'}\n"
                    "grid: {cc.algorithm: [dcqcn, none]}\n")
    r = rdmalab_cli("sweep", path, "--out", tmp_path / "out", "--backend", "slurm")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out" / "slurm" / "sweep.sbatch").read_text()
    assert "#SBATCH --job-name=rdmalab-DCQCN-vs.-none----test-\n#SBATCH --array=0-1\n" in text, text


def test_a_second_sweep_into_the_same_directory_is_refused(tmp_path, sweep12):
    store = Store(tmp_path / "out")
    store.lock()
    try:
        r = rdmalab_cli("sweep", sweep12, "--out", tmp_path / "out")
        assert r.returncode == 4 and "another `rdmalab sweep` is running" in r.stderr
    finally:
        store.unlock()


def test_shipped_example_sweeps_expand_and_validate(examples):
    files = sorted(examples.glob("*sweep*.yaml"))
    assert len(files) >= 2
    for f in files:
        r = rdmalab_cli("sweep", f, "--out", "unused", "--dry-run")
        assert r.returncode == 0, r.stderr
        n = len(load_sweep(f).runs)
        assert r.stdout.count("\n") == n + 1 and n >= 12


def test_every_sweep_key_and_manifest_column_is_documented(root, local_sweep):
    docs = (root / "docs" / "sweeps.md").read_text()
    for key in SWEEP_KEYS:
        assert f"`{key}`" in docs, key
    row = manifest(local_sweep)[0]
    assert set(row) == {"index", "run_id", "params", "run_dir", *RECORD_FIELDS}
    for col in row:
        assert f"`{col}`" in docs, f"manifest column {col} is not documented in docs/sweeps.md"
    rec = json.loads((local_sweep / row["run_dir"] / "run.json").read_text())
    for col in rec:
        assert f"`{col}`" in docs, f"run.json key {col} is not documented"
    assert Results(local_sweep).manifest().columns[:2] == ["index", "run_id"]


def test_ray_backend_joins_a_running_cluster(tmp_path, examples):
    import ray

    path = tmp_path / "ray-sweep.yaml"
    path.write_text(f"base: {examples / 'dumbbell-dcqcn.yaml'}\nset: {{duration: 1ms}}\n"
                    "grid: {cc.algorithm: [dcqcn, none]}\nseeds: [1, 2]\n")
    ctx = ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")  # "the cluster"
    try:
        address = ctx.address_info["gcs_address"]
        r = rdmalab_cli("sweep", path, "--out", tmp_path / "out", "--backend", "ray", "--address", address)
        assert r.returncode == 0, r.stderr
        assert f"4 to run on ray at {address}" in r.stderr
        rows = manifest(tmp_path / "out")
        assert [r["status"] for r in rows] == ["done"] * 4 and {r["backend"] for r in rows} == {"ray"}
        ref = tmp_path / "local"
        assert rdmalab_cli("sweep", path, "--out", ref, "--quiet").returncode == 0
        assert run_digests(tmp_path / "out") == run_digests(ref)
    finally:
        ray.shutdown()


CONTROLLER = '''
from rdmalab import Controller


class Fixed(Controller):
    subscriptions = ["ACK"]

    def __init__(self, gbps: int = 10):
        self.gbps = gbps

    def on_event(self, event, ctx):
        ctx.set_rate(self.gbps * 10**9)


class Other(Fixed):
    pass
'''


def _python_cc_sweep(tmp_path, examples, points):
    base = tmp_path / "base.yaml"
    base.write_text((examples / "dumbbell-dcqcn.yaml").read_text())
    return sweep_from_dict({"base": str(base), "set": {"duration": "200us"}, "grid": {"cc": points}},
                           sweep_dir=tmp_path, check=False)


def test_a_python_controller_is_part_of_a_runs_id(tmp_path, examples):
    """The core sees a Python controller as no CC; its class, parameters and
    code must still tell runs apart, or a sweep refuses to compare two of
    them and reuses a stale result after the controller changed."""
    points = {"fixed10": {"algorithm": "python", "class": "cc.py:Fixed"},
              "fixed5": {"algorithm": "python", "class": "cc.py:Fixed", "params": {"gbps": 5}},
              "other": {"algorithm": "python", "class": "cc.py:Other"},
              "none": {"algorithm": "none"}}
    (tmp_path / "cc.py").write_text(CONTROLLER)
    ids = [r.run_id for r in _python_cc_sweep(tmp_path, examples, points).runs]
    assert len(set(ids)) == 4, ids
    # Editing the class's file makes new runs; saving it unchanged does not.
    (tmp_path / "cc.py").write_text(CONTROLLER)
    assert [r.run_id for r in _python_cc_sweep(tmp_path, examples, points).runs] == ids
    (tmp_path / "cc.py").write_text(CONTROLLER.replace("10**9", "1_000_000_000"))
    again = [r.run_id for r in _python_cc_sweep(tmp_path, examples, points).runs]
    assert again[:3] != ids[:3] and again[3] == ids[3]


def test_a_python_controller_split_over_files_runs_and_its_modules_are_part_of_the_id(tmp_path, examples):
    """A controller may import modules of its own from beside its file
    (`from helpers_x import rate`), and those import others in turn or
    inside a method; editing any of them makes new runs, as editing the
    class's file does, or a sweep would reuse results of the old code.
    Imports of Python's own or installed modules leave the id as the
    class's file alone gives it, so earlier stores stay valid. (The module
    names are unique to this test: Python keeps an imported module for
    the process.)"""
    tag = tmp_path.name.replace("-", "_")
    helpers, consts, lazy = f"helpers_{tag}", f"consts_{tag}", f"lazy_{tag}"
    (tmp_path / f"{consts}.py").write_text("GBPS = 10\n")
    (tmp_path / f"{helpers}.py").write_text(f"from {consts} import GBPS\n\ndef rate():\n    return GBPS * 10**9\n")
    (tmp_path / f"{lazy}.py").write_text("FACTOR = 1\n")
    (tmp_path / "cc.py").write_text(f"""
import json
import yaml
from rdmalab import Controller
from {helpers} import rate


class Split(Controller):
    subscriptions = ["ACK"]

    def on_event(self, event, ctx):
        import {lazy}
        ctx.set_rate(rate() * {lazy}.FACTOR)
""")
    (tmp_path / "plain.py").write_text("import json\nimport yaml\n" + CONTROLLER)
    points = {"split": {"algorithm": "python", "class": "cc.py:Split"},
              "plain": {"algorithm": "python", "class": "plain.py:Fixed"}}
    sweep = _python_cc_sweep(tmp_path, examples, points)
    ids = [r.run_id for r in sweep.runs]
    plain = hashlib.sha256((tmp_path / "plain.py").read_bytes()).hexdigest()
    assert json.loads(sweep.runs[1].scenario.identity())["cc"]["code"] == plain
    assert json.loads(sweep.runs[0].scenario.identity())["cc"]["code"] != (
        hashlib.sha256((tmp_path / "cc.py").read_bytes()).hexdigest())
    # It runs from the command line, in a process of its own, wherever that starts.
    (tmp_path / "split.yaml").write_text((examples / "dumbbell-dcqcn.yaml").read_text().replace(
        "cc:\n  algorithm: dcqcn", "cc:\n  algorithm: python\n  class: cc.py:Split"))
    r = rdmalab_cli("run", tmp_path / "split.yaml", "--out", tmp_path / "out", "--quiet")
    assert r.returncode == 0, r.stderr
    for name, text in ((consts, "GBPS = 10\n"), (consts, "GBPS = 5\n"), (lazy, "FACTOR = 2\n"),
                       (helpers, f"from {consts} import GBPS\n\ndef rate():\n    return GBPS * 1_000_000_000\n")):
        same = (tmp_path / f"{name}.py").read_text() == text
        (tmp_path / f"{name}.py").write_text(text)
        again = [r.run_id for r in _python_cc_sweep(tmp_path, examples, points).runs]
        assert (again[0] == ids[0]) == same, (name, text)
        assert again[1] == ids[1]
        ids = again


def test_a_controller_in_a_package_covers_the_modules_it_imports_relatively(tmp_path, monkeypatch):
    """`class: pkg.cc:Ctl`: `from . import util` and `from .sub import x`
    name modules of the same package, found as the package imported them."""
    import importlib

    from rdmalab.scenario import _user_modules

    pkg = f"pkg_{tmp_path.name.replace('-', '_')}"
    (tmp_path / pkg / "sub").mkdir(parents=True)
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "util.py").write_text("X = 1\n")
    (tmp_path / pkg / "sub" / "__init__.py").write_text("from .deep import Y\n")
    (tmp_path / pkg / "sub" / "deep.py").write_text("Y = 2\n")
    (tmp_path / pkg / "cc.py").write_text("import json\nfrom . import util\nfrom .sub import Y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(f"{pkg}.cc")
    found = _user_modules(tmp_path / pkg / "cc.py", pkg)
    assert {k: v.relative_to(tmp_path).as_posix() for k, v in found.items()} == {
        pkg: f"{pkg}/__init__.py", f"{pkg}.util": f"{pkg}/util.py", f"{pkg}.sub": f"{pkg}/sub/__init__.py",
        f"{pkg}.sub.deep": f"{pkg}/sub/deep.py"}, found


def test_a_runs_id_does_not_depend_on_where_a_c_controller_lies(tmp_path, examples, monkeypatch):
    """A C controller's source and library are absolute paths in the expanded
    scenario; the run id hashes the library's bytes instead, so another cache
    directory or another copy of the source gives the same id, and other
    code another."""
    if ccompile.which() is None:
        pytest.skip("no C compiler")
    ids = []
    for name, source in (("a", "dcqcn.c"), ("b", "dcqcn.c"), ("c", "edited.c")):
        d = tmp_path / name
        d.mkdir()
        text = (examples / "c" / "dcqcn.c").read_text()
        (d / source).write_text(text if source == "dcqcn.c" else text + "\n/* edited */\n")
        monkeypatch.setenv("RDMALAB_CACHE", str(tmp_path / f"cache-{name}"))
        spec = {"base": str(examples / "dumbbell-dcqcn.yaml"), "set": {"duration": "200us"},
                "grid": {"cc": {"c": {"algorithm": "c", "source": str(d / source), "name": "dcqcn"}}}}
        sweep = sweep_from_dict(spec, check=False)
        assert str(tmp_path / f"cache-{name}") in json.dumps(sweep.runs[0].scenario.data)
        ids.append(sweep.runs[0].run_id)
    assert ids[0] == ids[1] != ids[2], ids


def test_a_scenario_without_a_hidden_controller_keeps_its_run_id(examples):
    """Stores of earlier sweeps stay valid: for any other scenario the id
    still hashes exactly what the core is given."""
    from rdmalab.scenario import load_scenario
    from rdmalab.sweep.spec import run_id_of

    sc = load_scenario(examples / "dumbbell-dcqcn.yaml")
    assert sc.identity() == sc.to_json()
    assert run_id_of(sc) == hashlib.sha256(sc.to_json().encode()).hexdigest()[:16]


def test_runs_that_start_flows_too_late_are_warned_of_once_before_the_sweep(tmp_path):
    """A sweep over `duration` may cut runs short on purpose, a typo may not:
    the sweep says so once, when it expands the runs, and its workers keep
    quiet (each would print it again)."""
    (tmp_path / "s.yaml").write_text(
        "name: late\nduration: 2ms\n"
        "topology: {kind: single_switch, hosts: 3, host_link: {rate: 100Gbps, delay: 1us}}\n"
        "workload:\n  flows:\n    - {src: h0, dst: h1, size: 4KB}\n    - {src: h1, dst: h2, size: 4KB, start: 100us}\n")
    (tmp_path / "sw.yaml").write_text("base: s.yaml\ngrid: {duration: [50us, 80us, 2ms]}\n")
    said = ("rdmalab: warning: 2 of 3 runs cannot complete all they start; first: run 0 (duration=50us): "
            "1 flow starts at or after the duration (50 µs): it cannot complete; lengthen `duration` or move the starts")
    r = rdmalab_cli("sweep", tmp_path / "sw.yaml", "--out", tmp_path / "o", "--dry-run")
    assert r.returncode == 0 and said in r.stderr, r.stderr
    r = rdmalab_cli("sweep", tmp_path / "sw.yaml", "--out", tmp_path / "o", "--workers", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert [line for line in r.stderr.splitlines() if "start" in line] == [said], r.stderr
    (tmp_path / "sw.yaml").write_text("base: s.yaml\ngrid: {duration: [1ms, 2ms]}\n")
    r = rdmalab_cli("sweep", tmp_path / "sw.yaml", "--out", tmp_path / "o2", "--dry-run")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


def test_set_on_the_command_line_sets_every_run_and_never_an_axis(sweep12, tmp_path):
    """`sweep --set KEY=VALUE` sets a key of every run's scenario after the
    file's `set:` (replacing the file's value for the same key), so the runs
    are new runs; a key the grid varies, or one inside a set key, is refused
    naming the --set, before anything runs."""
    plain = load_sweep(sweep12, check=False)
    longer = load_sweep(sweep12, check=False, overrides={"duration": "3ms", "switch.buffer": "8MiB"})
    assert [r.params for r in longer.runs] == [r.params for r in plain.runs]
    for a, b in zip(plain.runs, longer.runs):
        assert a.run_id != b.run_id
    out = tmp_path / "o"
    r = rdmalab_cli("sweep", sweep12, "--out", out, "--quiet", "--set", "duration=1ms")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    for row in rows:
        s = json.loads((out / row["run_dir"] / "summary.json").read_text())
        # The file's `set: {duration: 2ms}` is replaced.
        assert s["sim_time_ps"] <= 1_000_000_000, s
    for pair, said in [("cc=null", "`cc` is given conflicting values by both --set cc and grid"),
                       ("cc.algorithm=hpcc", "`cc` (grid"),
                       ("workload.poisson.load=0.5", "--set workload.poisson.load"),
                       ("seed=7", "--set seed")]:
        r = rdmalab_cli("sweep", sweep12, "--out", tmp_path / "x", "--set", pair)
        assert r.returncode != 0 and said in r.stderr, (pair, r.stderr)
        assert not (tmp_path / "x").exists()
