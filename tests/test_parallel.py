"""`--threads N`: a run split over threads writes the serial run's files,
byte for byte (docs/parallel.md); what it cannot split is refused by name."""

import pytest
from conftest import rdmalab_cli

import rdmalab


def test_the_quickstart_on_two_threads_writes_the_serial_files(tmp_path, root):
    # Perftest applications and Poisson flows over a DCQCN dumbbell with PFC and samples.
    example = root / "examples" / "dumbbell-dcqcn.yaml"
    for threads in (1, 2):
        r = rdmalab_cli("run", example, "--out", tmp_path / f"t{threads}", "--quiet", "--threads", threads)
        assert r.returncode == 0, r.stderr
    serial = sorted(p.name for p in (tmp_path / "t1").iterdir())
    assert serial == sorted(p.name for p in (tmp_path / "t2").iterdir())
    assert "summary.json" in serial and "qp_samples.csv" in serial
    for name in serial:
        a, b = (tmp_path / "t1" / name).read_bytes(), (tmp_path / "t2" / name).read_bytes()
        assert a == b, f"{name} differs on two threads"


def test_the_python_api_takes_threads_and_gives_the_same_tables(root):
    example = root / "examples" / "dumbbell-dcqcn.yaml"
    one = rdmalab.run(example, duration="2ms")
    two = rdmalab.run(example, threads=2, duration="2ms")
    for t in ("flows", "apps", "pfc_events", "port_samples"):
        assert one.table(t).equals(two.table(t)), t
    assert one.summary["events"] == two.summary["events"]


def test_what_cannot_run_in_parallel_is_refused_before_the_run(tmp_path, root):
    r = rdmalab_cli("run", root / "examples" / "leaf-spine-read.yaml", "--out", tmp_path / "o", "--threads", "2")
    assert r.returncode != 0
    assert "threads: 2" in r.stderr and "READ" in r.stderr and "allowed: threads 1" in r.stderr, r.stderr
    assert not (tmp_path / "o" / "flows.csv").exists()


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_a_bad_thread_count_names_the_option(tmp_path, root, bad):
    r = rdmalab_cli("run", root / "examples" / "dumbbell-dcqcn.yaml", "--out", tmp_path / "o", "--threads", bad)
    assert r.returncode != 0
    assert "--threads" in r.stderr, r.stderr


def test_a_python_controller_runs_on_one_thread_and_says_so(tmp_path, root):
    r = rdmalab_cli("run", root / "examples" / "python-controller.yaml", "--out", tmp_path / "o", "--threads", "2")
    assert r.returncode != 0
    assert "threads: 2" in r.stderr and "Python controller" in r.stderr, r.stderr
