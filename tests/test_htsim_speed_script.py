"""scripts/htsim-speed.sh, which times rdmalab beside htsim's RoCE on the
same flows. htsim is not here, so stand-ins for it and for rdmalab burn
known amounts of CPU; this checks the inputs the script writes for each,
the order of the runs and the ratio it reports, not any speed."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def burner(path, body):
    path.write_text("#!/usr/bin/env python3\nimport sys, time, pathlib, json\n" + body +
                    "t = time.process_time()\nwhile time.process_time() - t < spend: pass\n")
    path.chmod(0o755)


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="needs GNU time at /usr/bin/time")
def test_htsim_speed_gives_both_the_same_flows_alternates_runs_and_divides_by_the_mean(tmp_path):
    if shutil.which("rdmalab") is None:
        pytest.skip("needs the rdmalab command installed (it writes the flow file)")
    # "htsim" spends 0.4 s and finishes every flow of its connection matrix
    # but the last; "rdmalab" 0.2 s the first time and 0.6 s the second.
    htsim = tmp_path / "htsim_roce"
    burner(htsim, "a = sys.argv[1:]; opt = dict(zip(a[::2], a[1::2]))\n"
                  "assert opt['-nodes'] == '16' and opt['-end'] == '400' and opt['-mtu'] == '1000'\n"
                  "conns = [l for l in pathlib.Path(opt['-tm']).read_text().splitlines() if '->' in l]\n"
                  "for c in conns[:-1]: print(f'Flow RoCE_{c.split()[0]} 0 finished at 1.0 total bytes 1')\n"
                  "spend = 0.4\n")
    rdm = tmp_path / "rdmalab-stand-in"
    count = tmp_path / "count"
    burner(rdm, f"assert sys.argv[1:3] == ['run', 'rdmalab.yaml'] and sys.argv[3:5] == ['--out', 'rdmalab-run']\n"
                f"c = pathlib.Path({str(count)!r}); n = int(c.read_text()) if c.exists() else 0\n"
                f"c.write_text(str(n + 1)); spend = 0.2 if n == 0 else 0.6\n"
                f"pathlib.Path('rdmalab-run').mkdir()\n"
                f"pathlib.Path('rdmalab-run/summary.json').write_text(json.dumps({{'flows_completed': 7}}))\n")
    out = tmp_path / "out"
    env = dict(os.environ, K="4", END_US="400", WINDOW="0.0005", SEED="3", RDMALAB=str(rdm))
    res = subprocess.run(["bash", str(ROOT / "scripts" / "htsim-speed.sh"), str(htsim), str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    report = (out / "speed.txt").read_text()
    assert report in res.stdout
    # The same flows, in order, in both inputs.
    ns3 = (out / "flow.txt").read_text().split("\n")
    flows = [line.split() for line in ns3[1:1 + int(ns3[0])]]
    assert len(flows) > 3
    tm = [line for line in (out / "tm.cm").read_text().splitlines() if "->" in line]
    csv = (out / "flows.csv").read_text().splitlines()
    assert csv[0] == "src,dst,size_bytes,start_ps" and len(tm) == len(csv) - 1 == len(flows)
    # htsim_roce starts every connection at 0, whatever its start: so do both.
    for i, (f, t, c) in enumerate(zip(flows, tm, csv[1:])):
        assert t == f"{f[0]}->{f[1]} id {i + 1} start 0 size {f[4]}"
        assert c == f"{f[0]},{f[1]},{f[4]},0"
    scenario = (out / "rdmalab.yaml").read_text()
    assert "kind: fat_tree\n  k: 4\n" in scenario and "algorithm: none" in scenario and "mtu: 1000B" in scenario
    runs = re.findall(r"^(rdmalab|htsim): ([0-9.]+) s", report, re.M)
    assert [r[0] for r in runs] == ["rdmalab", "htsim", "rdmalab"]
    a1, h, a2 = (float(r[1]) for r in runs)
    assert a1 < 0.4 < a2 and h >= 0.4
    row = re.search(r"^\| 1 \| ([0-9.]+) s \| ([0-9.]+), ([0-9.]+) s \| ([0-9.]+)x \| (\d+) vs (\d+) \| \d+ MB vs \d+ MB \|$",
                    report, re.M)
    assert row, report
    assert (float(row[1]), float(row[2]), float(row[3])) == (h, a1, a2)
    assert row[4] == f"{h / ((a1 + a2) / 2):.1f}"
    assert (int(row[5]), int(row[6])) == (len(flows) - 1, 7)


@pytest.mark.parametrize("env, says", [({"K": "5"}, "K: '5' is odd"), ({"ROUNDS": "0"}, "ROUNDS: '0'"),
                                       ({"MTU": "1k"}, "MTU: '1k'")])
def test_htsim_speed_refuses_bad_settings_before_running(tmp_path, env, says):
    res = subprocess.run(["bash", str(ROOT / "scripts" / "htsim-speed.sh"), "/bin/true", str(tmp_path / "out")],
                         cwd=ROOT, env=dict(os.environ, **env), capture_output=True, text=True)
    assert res.returncode == 2 and says in res.stderr
    assert not (tmp_path / "out").exists()  # nothing generated or run


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="needs GNU time at /usr/bin/time")
def test_htsim_speed_refuses_a_run_in_which_htsim_lost_its_losslessness(tmp_path):
    """htsim's lossless queue that overflows says so and goes on: its time
    would be that of another run than the one compared."""
    if shutil.which("rdmalab") is None:
        pytest.skip("needs the rdmalab command installed (it writes the flow file)")
    htsim = tmp_path / "htsim_roce"
    burner(htsim, "print(' Queue LS0->US1(0) LOSSLESS not working! I should have dropped this packet3')\nspend = 0\n")
    rdm = tmp_path / "rdmalab-stand-in"
    burner(rdm, "pathlib.Path('rdmalab-run').mkdir()\n"
                "pathlib.Path('rdmalab-run/summary.json').write_text(json.dumps({'flows_completed': 1}))\nspend = 0\n")
    res = subprocess.run(["bash", str(ROOT / "scripts" / "htsim-speed.sh"), str(htsim), str(tmp_path / "out")],
                         cwd=ROOT, env=dict(os.environ, K="4", END_US="100", WINDOW="0.0002", RDMALAB=str(rdm)),
                         capture_output=True, text=True)
    assert res.returncode == 1 and "overflowed a lossless queue" in res.stderr and "raise Q" in res.stderr, res.stderr


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="needs GNU time at /usr/bin/time")
@pytest.mark.parametrize("tries, fails", [("3", 1), ("2", 2)])
def test_htsim_speed_runs_htsim_again_after_it_stops_on_an_assertion(tmp_path, tries, fails):
    """htsim_roce sometimes stops on an assertion; the script says so, runs
    it again up to TRIES times in all, and gives up after that."""
    if shutil.which("rdmalab") is None:
        pytest.skip("needs the rdmalab command installed (it writes the flow file)")
    count = tmp_path / "htsim-count"
    htsim = tmp_path / "htsim_roce"
    burner(htsim, f"c = pathlib.Path({str(count)!r}); n = int(c.read_text()) if c.exists() else 0\n"
                  f"c.write_text(str(n + 1))\n"
                  f"if n < {fails}: print('htsim_roce: queue.cpp:502: Assertion `_sending != NULL` failed.'); sys.exit(134)\n"
                  f"print('Flow Roce_0_1 5 finished at 1.0 total bytes 1')\nspend = 0\n")
    rdm = tmp_path / "rdmalab-stand-in"
    burner(rdm, "pathlib.Path('rdmalab-run').mkdir()\n"
                "pathlib.Path('rdmalab-run/summary.json').write_text(json.dumps({'flows_completed': 1}))\nspend = 0\n")
    out = tmp_path / "out"
    res = subprocess.run(["bash", str(ROOT / "scripts" / "htsim-speed.sh"), str(htsim), str(out)],
                         cwd=ROOT, env=dict(os.environ, K="4", END_US="100", WINDOW="0.0002", RDMALAB=str(rdm),
                                            TRIES=tries),
                         capture_output=True, text=True)
    assert res.stdout.count("htsim stopped: htsim_roce: queue.cpp:502: Assertion") == fails
    if fails < int(tries):
        assert res.returncode == 0, res.stderr
        assert "htsim: " in res.stdout and "| 1 vs 1 |" in (out / "speed.txt").read_text()
    else:
        assert res.returncode == 1 and f"htsim failed {tries} times" in res.stderr, res.stderr
