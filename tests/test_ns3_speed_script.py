"""scripts/ns3-speed.sh, which times rdmalab beside ns-3 HPCC for the
README's ratios. ns-3 is not here, so stand-ins for it and for rdmalab
burn known amounts of CPU; this checks the order of the runs and the
ratio the script reports from them, not any speed."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="needs GNU time at /usr/bin/time")
def test_ns3_speed_alternates_runs_and_divides_by_the_mean(tmp_path):
    if shutil.which("rdmalab") is None:
        pytest.skip("needs the rdmalab command installed (it writes the flow file)")

    def burner(path, body):
        path.write_text("#!/usr/bin/env python3\nimport sys, time, pathlib\n" + body +
                        "t = time.process_time()\nwhile time.process_time() - t < spend: pass\n")
        path.chmod(0o755)

    # Stand-ins that spend known CPU time: "ns-3" 0.4 s, run where ns-3
    # runs (the run directory, on its config file); "rdmalab" 0.2 s the
    # first time and 0.6 s the second, so dividing by one run instead of
    # the mean of both would show.
    ns3 = tmp_path / "third"
    burner(ns3, "assert pathlib.Path(sys.argv[1]).is_file() and sys.argv[1].startswith('mix/config-')\n"
                "spend = 0.4\n")
    rdm = tmp_path / "rdmalab-stand-in"
    count = tmp_path / "count"
    burner(rdm, f"assert sys.argv[1:3] == ['hpcc', 'run'] and pathlib.Path(sys.argv[3]).is_file()\n"
                f"c = pathlib.Path({str(count)!r}); n = int(c.read_text()) if c.exists() else 0\n"
                f"c.write_text(str(n + 1)); spend = 0.2 if n == 0 else 0.6\n")
    out = tmp_path / "out"
    env = dict(os.environ, WINDOW="0.0001", CCS="dcqcn", SEED="3", RDMALAB=str(rdm))
    res = subprocess.run(["bash", str(ROOT / "scripts" / "ns3-speed.sh"), str(ns3), str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    report = (out / "speed.txt").read_text()
    assert report in res.stdout
    runs = re.findall(r"^(rdmalab|ns-3): ([0-9.]+) s", report, re.M)
    assert [r[0] for r in runs] == ["rdmalab", "ns-3", "rdmalab"]
    a1, n, a2 = (float(r[1]) for r in runs)
    assert a1 < 0.4 < a2 and n >= 0.4
    row = re.search(r"^\| dcqcn \| 1 \| ([0-9.]+) s \| ([0-9.]+), ([0-9.]+) s \| ([0-9.]+)x \| \d+ MB vs \d+ MB \|$",
                    report, re.M)
    assert row, report
    assert (float(row[1]), float(row[2]), float(row[3])) == (n, a1, a2)
    assert row[4] == f"{n / ((a1 + a2) / 2):.1f}"


@pytest.mark.parametrize("env, says", [({"CCS": "dcqcn timely"}, "CCS: 'timely'"), ({"ROUNDS": "0"}, "ROUNDS: '0'")])
def test_ns3_speed_refuses_bad_settings_before_running(tmp_path, env, says):
    res = subprocess.run(["bash", str(ROOT / "scripts" / "ns3-speed.sh"), "/bin/true", str(tmp_path / "out")],
                         cwd=ROOT, env=dict(os.environ, **env), capture_output=True, text=True)
    assert res.returncode == 2 and says in res.stderr
    assert not (tmp_path / "out").exists()  # nothing generated or run
