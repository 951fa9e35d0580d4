"""Controllers in C (DOCA PCC's device API): the shipped C DCQCN and DOCA
rtt_template give the same bytes as the Rust versions; faults, bad results,
bad parameters and bad builds become errors that name the controller."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import rdmalab_cli

from rdmalab import ccompile

TABLES = ["flows.csv", "qp_samples.csv", "port_samples.csv", "pfc_events.csv", "probes.csv", "fct.txt"]

BASE = """\
name: {name}
seed: 1
duration: 3ms
topology:
  kind: single_switch
  hosts: 9
  host_link: {{rate: 100Gbps, delay: 1us}}
switch:
  buffer: 32MiB
  pfc: {{enabled: true}}
  ecn: {{thresholds: [{{rate: 100Gbps, kmin: 5KB, kmax: 200KB, pmax: 0.01}}]}}
cc: {cc}
workload: {workload}
"""
TWO_FLOWS = "{flows: [{src: h0, dst: h8, size: 4MB}, {src: h1, dst: h8, size: 4MB, start: 100us}]}"
INCAST = "{incast: {senders: 8, receiver: h8, size: 1MB}}"


def run(tmp_path, name, cc, workload=TWO_FLOWS, expect_ok=True):
    f = tmp_path / f"{name}.yaml"
    f.write_text(BASE.format(name=name, cc=cc, workload=workload))
    r = rdmalab_cli("run", f, "--out", tmp_path / name, "--quiet")
    if expect_ok:
        assert r.returncode == 0, r.stderr
    return r, tmp_path / name


@pytest.mark.parametrize("workload", [TWO_FLOWS, INCAST], ids=["two-flows", "incast"])
@pytest.mark.parametrize("rust,c_file", [("dcqcn", "dcqcn.c"), ("doca-rtt", "rtt_template.c")])
def test_c_and_rust_versions_give_the_same_bytes(tmp_path, examples, workload, rust, c_file):
    _, a = run(tmp_path, "rust", f"{{algorithm: {rust}}}", workload)
    _, b = run(tmp_path, "c", f"{{algorithm: c, source: {examples / 'c' / c_file}, name: {rust}}}", workload)
    for t in TABLES:
        assert (a / t).read_bytes() == (b / t).read_bytes(), t
    sa, sb = json.loads((a / "summary.json").read_text()), json.loads((b / "summary.json").read_text())
    assert sa.pop("name") == "rust" and sb.pop("name") == "c"
    assert sa == sb
    # The controller acted: congestion was signalled and rates were cut.
    assert sa["cnps_sent"] > 0 and sa["flows_completed"] == sa["flows_total"]


def controller(tmp_path, body: str, init: str = "") -> str:
    src = tmp_path / "bad.c"
    src.write_text(textwrap.dedent(f"""\
        #include <rdmalab_cc.h>
        #include <stddef.h>
        volatile uint32_t zero = 0;
        void doca_pcc_dev_user_init(uint32_t *disable) {{ {init} }}
        void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *c, doca_pcc_dev_event_t *e,
                                    const doca_pcc_dev_attr_t *a, doca_pcc_dev_results_t *r) {{
            (void)c; (void)a;
            if (doca_pcc_dev_get_ev_attr(e).ev_type == DOCA_PCC_DEV_EVNT_ROCE_CNP) {{ {body} }}
        }}
        """))
    return f"{{algorithm: c, source: {src}, name: bad}}"


@pytest.mark.parametrize("body,says", [
    ("*(volatile int *)NULL = 1;", "SIGSEGV"),
    ("r->rate = 1000 / zero;", "SIGFPE"),
    ("r->rate = (1u << 20) + 1;", "allowed: 1 to 1048576"),
    ("r->rate = 0;", "rate = 0"),
    ("r->rdmalab_rate_bps = 200000000000ull;", "above the line rate"),
    ("r->rdmalab_window_op = 7;", "rdmalab_window_op = 7"),
    ("r->rdmalab_timer_op[0] = 1; r->rdmalab_timer_ps[0] = 5;", "before now"),
])
def test_a_faulty_controller_stops_the_run_with_a_named_error(tmp_path, body, says):
    r, _ = run(tmp_path, "bad", controller(tmp_path, body), expect_ok=False)
    assert r.returncode != 0
    assert "bad" in r.stderr and "CNP" in r.stderr and says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("body", ["r->rate = 1u << 20;", "r->rate = 1u << 19;", "r->rate = 1;"])
def test_rates_at_and_inside_the_bounds_are_accepted(tmp_path, body):
    """The bounds above are inclusive: a full (2^20), half or smallest rate runs."""
    r, _ = run(tmp_path, "ok", controller(tmp_path, body))
    assert r.returncode == 0, r.stderr


def test_a_fault_in_init_is_named(tmp_path):
    r, _ = run(tmp_path, "bad", controller(tmp_path, "", init="*(volatile int *)NULL = 1;"), expect_ok=False)
    assert r.returncode != 0 and "doca_pcc_dev_user_init" in r.stderr and "SIGSEGV" in r.stderr, r.stderr


def test_parameters_are_checked_against_what_the_controller_registered(tmp_path, examples):
    src = examples / "c" / "rtt_template.c"
    r, _ = run(tmp_path, "p", f"{{algorithm: c, source: {src}, params: {{AIX: 1}}}}", expect_ok=False)
    assert "cc.params.AIX" in r.stderr and "UPDATE_FACTOR" in r.stderr, r.stderr
    r, _ = run(tmp_path, "p", f"{{algorithm: c, source: {src}, params: {{MIN_RATE: 0}}}}", expect_ok=False)
    assert "cc.params.MIN_RATE" in r.stderr and "allowed: 1 to 1048576" in r.stderr, r.stderr
    r, _ = run(tmp_path, "p", f"{{algorithm: c, source: {src}, params: {{MIN_RATE: 1048577}}}}", expect_ok=False)
    assert "cc.params.MIN_RATE" in r.stderr and "allowed: 1 to 1048576" in r.stderr, r.stderr
    for edge in (1, 1048576):  # the registered bounds themselves are allowed
        r, _ = run(tmp_path, f"edge{edge}", f"{{algorithm: c, source: {src}, params: {{MIN_RATE: {edge}}}}}")
        assert r.returncode == 0, r.stderr
    # A parameter reaches the controller: new flows start at 1/10 of line rate.
    _, a = run(tmp_path, "line", f"{{algorithm: c, source: {src}}}", INCAST)
    _, b = run(tmp_path, "tenth", f"{{algorithm: c, source: {src}, params: {{NEW_FLOW_RATE: 104858}}}}", INCAST)
    assert (a / "flows.csv").read_text() != (b / "flows.csv").read_text()


REGISTER = "struct doca_pcc_dev_algo_meta_data md = {0xBFFF, 0, 1, 0, 0}; " \
           "doca_pcc_dev_algo_init_metadata(0, &md, 2, 0); "


@pytest.mark.parametrize("init,says", [
    # default above max: the NIC's API returns a failure, and the parameter would read 0
    ('doca_pcc_dev_algo_init_param(0, 0, 50, 10, 1, 1, 2, (uint64_t)(uintptr_t)"AI");',
     "doca_pcc_dev_algo_init_param(param_id 0, `AI`, default 50, max 10, min 1) was refused "
     "(allowed: param_id 0 to 43, min <= default <= max)"),
    ('doca_pcc_dev_algo_init_param(0, 44, 5, 10, 1, 1, 2, (uint64_t)(uintptr_t)"AI");',
     "doca_pcc_dev_algo_init_param(param_id 44, `AI`"),
    ('doca_pcc_dev_algo_init_param(0, 0, 5, 10, 1, 1, 2, (uint64_t)(uintptr_t)"AI"); '
     'doca_pcc_dev_algo_init_param(0, 1, 5, 10, 1, 1, 2, (uint64_t)(uintptr_t)"ai");',
     "registers parameters 0 (`AI`) and 1 (`ai`) under one name"),
])
def test_a_refused_parameter_registration_refuses_the_controller(tmp_path, init, says):
    r, _ = run(tmp_path, "reg", controller(tmp_path, "", init=REGISTER + init), expect_ok=False)
    assert r.returncode == 2 and "scenario refused" in r.stderr and "C controller `bad`" in r.stderr, r.stderr
    assert says in r.stderr, r.stderr


def test_a_built_library_as_source_is_named(tmp_path, examples):
    lib = tmp_path / "dcqcn.so"
    assert rdmalab_cli("cc", "build", examples / "c" / "dcqcn.c", "-o", lib).returncode == 0
    r, _ = run(tmp_path, "s", f"{{algorithm: c, source: {lib}}}", expect_ok=False)
    assert r.returncode == 2 and f"cc.source: `{lib}` is a built library or object, not C source" in r.stderr, \
        r.stderr


def test_an_empty_name_is_refused(tmp_path, examples):
    src = examples / "c" / "dcqcn.c"
    r, _ = run(tmp_path, "n", f"{{algorithm: c, source: {src}, name: ''}}", expect_ok=False)
    assert r.returncode == 2 and "cc.name: `` — allowed: a name that is not empty" in r.stderr, r.stderr


def test_compiler_errors_show_file_and_line(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("#include <rdmalab_cc.h>\nvoid doca_pcc_dev_user_algo(void) { this is not C }\n")
    r, _ = run(tmp_path, "broken", f"{{algorithm: c, source: {src}}}", expect_ok=False)
    assert "cc.source" in r.stderr and "broken.c:2" in r.stderr, r.stderr


def test_a_missing_compiler_is_named(tmp_path, examples, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("RDMALAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ccompile.CompileError, match="no C compiler"):
        ccompile.build(examples / "c" / "dcqcn.c")


def test_a_library_without_the_runtime_is_refused(tmp_path):
    src = tmp_path / "plain.c"
    src.write_text("void doca_pcc_dev_user_algo(void *a, void *b, const void *c, void *d) {}\n")
    lib = tmp_path / "plain.so"
    assert os.system(f"cc -shared -fPIC {src} -o {lib}") == 0
    r, _ = run(tmp_path, "plain", f"{{algorithm: c, library: {lib}}}", expect_ok=False)
    assert "cc.library" in r.stderr and "rdmalab cc build" in r.stderr, r.stderr


def test_a_plain_library_that_calls_the_runtime_is_refused_saying_how_to_build_it(tmp_path, examples):
    """Built with plain `cc -shared`, a controller that calls the DOCA device
    API (every real one: the shipped template does) failed to load on the
    runtime's symbols, with a raw dlopen error naming a private copy."""
    lib = tmp_path / "rtt_plain.so"
    cmd = f"cc -shared -fPIC -I {ccompile.INCLUDE_DIR} {examples / 'c' / 'rtt_template.c'} -o {lib}"
    assert os.system(cmd) == 0, cmd
    r, _ = run(tmp_path, "plain", f"{{algorithm: c, library: {lib}}}", expect_ok=False)
    assert "Traceback" not in r.stderr, r.stderr
    assert f"cannot load `{lib}`: {lib}: undefined symbol: doca_pcc_dev_" in r.stderr, r.stderr
    assert "it calls rdmalab's C runtime without linking it: build it with `rdmalab cc build`" in r.stderr, r.stderr
    assert "rdmalab-cc-" not in r.stderr, r.stderr


def test_static_state_starts_afresh_in_every_run(tmp_path):
    # A controller that counts CNPs in a static and cuts its rate from the
    # 100th on: a second run in the same process must not inherit the count.
    src = tmp_path / "static.c"
    src.write_text(textwrap.dedent("""\
        #include <rdmalab_cc.h>
        static uint32_t cnps;
        void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *c, doca_pcc_dev_event_t *e,
                                    const doca_pcc_dev_attr_t *a, doca_pcc_dev_results_t *r) {
            (void)c; (void)a;
            if (doca_pcc_dev_get_ev_attr(e).ev_type == DOCA_PCC_DEV_EVNT_ROCE_CNP && ++cnps >= 100)
                r->rate = DOCA_PCC_DEV_MAX_RATE / 2;
        }
        """))
    import rdmalab
    from rdmalab.scenario import scenario_from_dict
    import yaml

    data = yaml.safe_load(BASE.format(name="s", cc=f"{{algorithm: c, source: {src}}}", workload=INCAST))
    outs = []
    for _ in range(2):
        sim = rdmalab._core.Simulation(scenario_from_dict(data).to_json())
        sim.run_until(sim.stop_ps)
        outs.append(json.dumps(sim.summary(), sort_keys=True))
    assert outs[0] == outs[1]


def test_cc_build_writes_a_loadable_library(tmp_path, examples):
    out = tmp_path / "dcqcn.so"
    r = rdmalab_cli("cc", "build", examples / "c" / "dcqcn.c", "-o", out)
    assert r.returncode == 0, r.stderr
    _, a = run(tmp_path, "built", f"{{algorithm: c, library: {out}, name: dcqcn}}")
    _, b = run(tmp_path, "rust", "{algorithm: dcqcn}")
    assert (a / "flows.csv").read_bytes() == (b / "flows.csv").read_bytes()


def test_a_failed_run_keeps_what_it_finished_and_says_why(tmp_path):
    r, out = run(tmp_path, "bad", controller(tmp_path, "*(volatile int *)NULL = 1;"), expect_ok=False)
    assert r.returncode == 3 and "saved the run so far" in r.stderr, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["end"] == "failed" and "SIGSEGV" in s["error"]
    assert (out / "flows.parquet").exists() and (out / "qp_samples.parquet").exists()


def _start_stuck_run(tmp_path, cc: str):
    """`rdmalab run` of a scenario whose controller says `looping` on standard
    error at its first event and then never returns; returns the process once
    it has said so."""
    f = tmp_path / "stuck.yaml"
    f.write_text(BASE.format(name="stuck", cc=cc, workload=TWO_FLOWS))
    p = subprocess.Popen([sys.executable, "-m", "rdmalab", "run", str(f), "--out", str(tmp_path / "out"), "--quiet"],
                         stderr=subprocess.PIPE, text=True)
    first = p.stderr.readline()  # blocks until the controller runs (after compiling it)
    assert first == "looping\n", first + p.stderr.read()
    return p


def _finish(p, within: float) -> tuple[int | None, str]:
    try:
        rc = p.wait(within)
    except subprocess.TimeoutExpired:
        rc = None
        p.kill()
        p.wait()
    return rc, p.stderr.read()


def test_a_c_controller_stuck_in_a_loop_is_ended_by_a_second_ctrl_c(tmp_path):
    """Ctrl-C reaches Python only between bytecodes, which a C loop never
    returns to: the first says a second one ends the run, the second ends it
    at once with status 130."""
    src = tmp_path / "loop.c"
    src.write_text(textwrap.dedent("""\
        #include <rdmalab_cc.h>
        #include <stdio.h>
        void doca_pcc_dev_user_init(uint32_t *disable) { (void)disable; }
        void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *c, doca_pcc_dev_event_t *e,
                                    const doca_pcc_dev_attr_t *a, doca_pcc_dev_results_t *r) {
            (void)c; (void)e; (void)a; (void)r;
            fputs("looping\\n", stderr);
            fflush(stderr);
            for (volatile unsigned long i = 0;; i++) {}
        }
        """))
    p = _start_stuck_run(tmp_path, f"{{algorithm: c, source: {src}, name: loop}}")
    try:
        p.send_signal(signal.SIGINT)
        time.sleep(2)  # the hint comes after 1 s; the run is still stuck
        assert p.poll() is None, "the first Ctrl-C cannot stop a C loop"
        p.send_signal(signal.SIGINT)
        rc, err = _finish(p, 10)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 130, err
    assert "press Ctrl-C again to end it at once" in err, err
    assert f"interrupted again: ended at once, without saving the run; the files in {tmp_path / 'out'} may be " \
           "incomplete" in err, err


def test_ctrl_c_in_a_python_controller_still_interrupts_and_saves_the_run(tmp_path):
    """The second-Ctrl-C watch leaves the first alone: a Python controller is
    interrupted by it, the run saved as interrupted."""
    (tmp_path / "slow.py").write_text(textwrap.dedent("""\
        import sys, time
        from rdmalab import Controller
        class Slow(Controller):
            subscriptions = ["ACK"]
            said = False
            def on_event(self, ev, ctx):
                if not Slow.said:
                    Slow.said = True
                    sys.stderr.write("looping\\n")
                    sys.stderr.flush()
                while True:
                    time.sleep(0.01)
        """))
    p = _start_stuck_run(tmp_path, f"{{algorithm: python, class: {tmp_path / 'slow.py'}:Slow}}")
    try:
        p.send_signal(signal.SIGINT)
        rc, err = _finish(p, 30)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 130 and "rdmalab: interrupted" in err and "interrupted again" not in err, err
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["end"] == "interrupted"
