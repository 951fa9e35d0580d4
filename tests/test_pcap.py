"""records.pcap: a two-flow run with ECN marking, CNPs and PFC writes
packets.pcap, and Debian's tshark dissects it as RoCEv2: the BTH opcodes of
each flow, PSNs consecutive from 0 per QP, ECN CE on as many data frames as
the switch marked, and the PFC pause frames the switch sent.

tshark is needed; scripts/test.sh (what CI runs) installs it and sets
RDMALAB_REQUIRE_TSHARK, so there these tests always run (a missing tshark
fails them). Elsewhere, without tshark and without CI set, they are skipped."""

import copy
import math
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

import rdmalab
from rdmalab.scenario import ScenarioError, load_scenario

SCENARIO = Path(__file__).parent / "scenarios" / "pcap-two-flows.yaml"
TSHARK = shutil.which("tshark")

REQUIRED = bool(os.environ.get("RDMALAB_REQUIRE_TSHARK") or os.environ.get("CI"))
needs_tshark = pytest.mark.skipif(
    TSHARK is None and not REQUIRED,
    reason="tshark is not installed (scripts/test.sh installs it)",
)

# Fields asked of tshark, in this order.
FIELDS = [
    "frame.time_epoch",
    "eth.src",
    "eth.type",
    "ip.src",
    "ip.dsfield.ecn",
    "ip.checksum.status",
    "udp.dstport",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.bth.a",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "macc.opcode",
    "macc.cbfc.enbv",
    *[f"macc.cbfc.pause_time.c{i}" for i in range(8)],
]

WRITE = {"first": 0x06, "middle": 0x07, "last": 0x08, "only": 0x0A}
SEND = {"first": 0x00, "middle": 0x01, "last": 0x02, "only": 0x04}
ACK, CNP = 0x11, 0x81


def _int(s: str) -> int | None:
    return int(s, 0) if s else None


def dissect(pcap: Path) -> list[dict]:
    """Every frame of `pcap` as tshark dissects it (RoCEv2 decoded on UDP 4791)."""
    if TSHARK is None:
        pytest.fail("tshark is missing where it is required (CI, scripts/test.sh): install it (apt-get install tshark)")
    cmd = [TSHARK, "-n", "-r", str(pcap), "-d", "udp.port==4791,infiniband",
           "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rows = []
    for line in r.stdout.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        rows.append(v)
    return rows


def nic_mac(ip: str) -> str:
    """The MAC of the NIC port of the host with address `ip` (11.0.N.1 is node N)."""
    node = int(ip.split(".")[2])
    return f"02:00:00:{node:02x}:00:00"


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("pcap")
    res = rdmalab.run(SCENARIO, out_dir=out)
    return out, res


@needs_tshark
def test_tshark_dissects_the_opcodes_psns_ecn_and_pfc_of_a_two_flow_run(capture):
    out, res = capture
    s = res.summary
    assert s["flows_completed"] == 3
    rows = dissect(out / "packets.pcap")
    assert len(rows) == s["pcap_frames"]
    ips = [r for r in rows if r["eth.type"] == "0x0800"]
    assert ips and all(r["ip.checksum.status"] == "1" for r in ips), "every IPv4 checksum is good"

    flows = pl.read_csv(out / "flows.csv")
    mtu = 1024
    roce = [r for r in rows if r["udp.dstport"] == "4791"]
    assert len(roce) == len(ips), "all IP frames of this run are RoCEv2"
    data = [r for r in roce if _int(r["infiniband.bth.opcode"]) not in (ACK, CNP)]
    for f in flows.iter_rows(named=True):
        qpn = 0x100 + f["qp"]
        mine = [r for r in data if _int(r["infiniband.bth.destqp"]) == qpn]
        # Each data packet is captured leaving its sender and reaching its receiver.
        sent = [r for r in mine if r["eth.src"] == nic_mac(r["ip.src"])]
        assert len(mine) == 2 * len(sent)
        n = math.ceil(f["size_bytes"] / mtu)
        assert [_int(r["infiniband.bth.psn"]) for r in sent] == list(range(n)), f"QP {qpn:#x} PSNs"
        ops = WRITE if f["verb"] == "write" else SEND
        want = [ops["only"]] if n == 1 else [ops["first"]] + [ops["middle"]] * (n - 2) + [ops["last"]]
        assert [_int(r["infiniband.bth.opcode"]) for r in sent] == want, f"flow {f['flow_id']} opcodes"
        # RETH on a WRITE's first packet, with the message length; the ack-request bit on the last.
        if f["verb"] == "write":
            assert _int(sent[0]["infiniband.reth.dmalen"]) == f["size_bytes"]
            assert all(r["infiniband.reth.dmalen"] == "" for r in sent[1:])
        assert sent[-1]["infiniband.bth.a"] in ("1", "True")
        assert all(r["infiniband.bth.a"] in ("0", "False") for r in sent[:-1])

    # ECN: data leave their NIC ECT(0); CE on exactly as many data frames as
    # the switch marked, all of them on the switch's side of the link.
    assert s["ecn_marked_packets"] > 0
    ce = [r for r in data if r["ip.dsfield.ecn"] == "3"]
    assert len(ce) == s["ecn_marked_packets"] == s["pcap_ecn_ce_frames"]
    assert all(r["eth.src"] != nic_mac(r["ip.src"]) for r in ce)
    assert all(r["ip.dsfield.ecn"] in ("2", "3") for r in data)

    # ACKs carry an AETH with the ACK syndrome; CNPs (opcode 0x81) answer the marks.
    acks = [r for r in roce if _int(r["infiniband.bth.opcode"]) == ACK]
    assert acks and all(_int(r["infiniband.aeth.syndrome"]) == 0x1F for r in acks)
    cnps = [r for r in roce if _int(r["infiniband.bth.opcode"]) == CNP]
    assert s["cnps_sent"] > 0 and len(cnps) == 2 * s["cnps_sent"]

    # PFC: MAC control frames, opcode 0x0101, one class enabled; pauses with
    # the longest quanta, resumes with 0, as many as the switch sent.
    pfc = [r for r in rows if r["eth.type"] == "0x8808"]
    assert all(_int(r["macc.opcode"]) == 0x0101 for r in pfc)
    pauses = resumes = 0
    for r in pfc:
        enbv = _int(r["macc.cbfc.enbv"])
        assert enbv and enbv & (enbv - 1) == 0, "one class per frame"
        q = _int(r[f"macc.cbfc.pause_time.c{enbv.bit_length() - 1}"])
        pauses += q == 0xFFFF
        resumes += q == 0
    assert s["pfc_pauses"] > 0
    assert (pauses, resumes) == (s["pfc_pauses"], s["pfc_resumes"])

    times = [float(r["frame.time_epoch"]) for r in rows]
    assert times == sorted(times), "frames are written in the order they start on the wire"


@needs_tshark
def test_a_filter_keeps_one_flow_a_window_and_a_snap_length(tmp_path, capture):
    sc = load_scenario(SCENARIO)
    data = copy.deepcopy(sc.data)
    data["records"]["pcap"] = {"flows": [1], "links": [["h1", "s0"]], "start": "5us", "end": "20us",
                               "snaplen": "96B"}
    res = rdmalab.run(data, out_dir=tmp_path)
    rows = dissect(tmp_path / "packets.pcap")
    assert rows and len(rows) == res.summary["pcap_frames"]
    qps = {_int(r["infiniband.bth.destqp"]) for r in rows if r["udp.dstport"] == "4791"}
    assert qps == {0x100 + 1}
    # Both directions of h1's link: h1's frames leave its NIC, h2's answers and PFC come from s0.
    for r in rows:
        if r["eth.src"] == "02:00:00:01:00:00":
            assert r["ip.src"] == "11.0.1.1"
        else:
            assert r["ip.src"] in ("", "11.0.2.1")
    times = [float(r["frame.time_epoch"]) for r in rows]
    assert 5e-6 <= min(times) and max(times) < 20e-6
    # Captured lengths are cut at 96 B; the original lengths are kept.
    r = subprocess.run([TSHARK, "-r", str(tmp_path / "packets.pcap"), "-T", "fields", "-e", "frame.cap_len",
                        "-e", "frame.len"], capture_output=True, text=True, check=True)
    lens = [tuple(map(int, line.split())) for line in r.stdout.splitlines()]
    assert all(c == min(96, n) for c, n in lens) and any(n > 96 for _, n in lens)


def test_the_capture_is_byte_identical_for_a_seed(tmp_path, capture):
    out, _ = capture
    rdmalab.run(SCENARIO, out_dir=tmp_path)
    assert (tmp_path / "packets.pcap").read_bytes() == (out / "packets.pcap").read_bytes()
    head = (out / "packets.pcap").read_bytes()[:24]
    assert head[:4] == bytes.fromhex("4d3cb2a1"), "nanosecond pcap magic, little-endian"
    assert int.from_bytes(head[20:24], "little") == 1, "LINKTYPE_ETHERNET"


def test_bad_filters_are_refused_before_the_run_naming_key_value_and_allowed():
    data = copy.deepcopy(load_scenario(SCENARIO).data)
    data["records"]["pcap"] = {
        "hosts": ["s0"],
        "ports": ["s0:9", "nowhere:0"],
        "links": [["h0", "h1"]],
        "flows": [7],
        "start": "30us",
        "end": "20us",
        "snaplen": "10B",
        "bogus": 1,
    }
    with pytest.raises(ScenarioError) as e:
        rdmalab.run(data)
    msg = str(e.value)
    for needle in [
        "records.pcap.bogus: unknown key; allowed here: hosts, ports, links, flows, start, end, snaplen",
        "records.pcap.hosts[0]: `s0` — is a switch, not a host",
        "records.pcap.ports[0]: `s0:9` — node `s0` has ports 0 to 2",
        "records.pcap.ports[1]: `nowhere:0` — no node `nowhere`",
        "records.pcap.links[0]: [h0, h1] — no link joins these two nodes",
        "records.pcap.flows[0]: `7` — allowed: a flow id from 0 to 2",
        "records.pcap.end: `20us` — must be after start (30us)",
        "records.pcap.snaplen: `10B` — allowed: 60B",
    ]:
        assert needle in msg, f"{needle!r} not in {msg}"


def test_a_capture_needs_an_output_directory():
    with pytest.raises(ScenarioError, match="records.pcap: writes packets.pcap into the output directory"):
        rdmalab.run(SCENARIO)
