"""The ns-3 HPCC simulator's `config.txt` and the files it names, as a native scenario.

`convert(CONFIG)` reads the config the way ns-3's `scratch/third.cc` does
(whitespace-separated `KEY value...`, its defaults for absent keys), reads the
topology and flow files it names, and maps everything to a native scenario
dict (docs/hpcc.md lists every key and what it maps to). Unlike ns-3 it
refuses what it cannot reproduce, naming the key: unknown keys, settings
rdmalab does not model, missing files (ns-3 spins forever on a missing
config). Keys that ns-3 itself parses and then ignores are accepted with a
warning that says so.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rdmalab import _core
from rdmalab._core import MAX_NODES, ScenarioError
from rdmalab.hpcc.units import (ns3_data_rate_parses, parse_rate_bps, parse_time_ps, ps_text, rate_text,
                                seconds_to_ns, us_text)

# Every key third.cc reads, with how many value tokens follow it ("map": `n` then n pairs).
ARITY: dict[str, int | str] = {
    "ENABLE_QCN": 1, "USE_DYNAMIC_PFC_THRESHOLD": 1, "PACKET_PAYLOAD_SIZE": 1,
    "TOPOLOGY_FILE": 1, "FLOW_FILE": 1, "TRACE_FILE": 1, "TRACE_OUTPUT_FILE": 1,
    "FCT_OUTPUT_FILE": 1, "PFC_OUTPUT_FILE": 1, "QLEN_MON_FILE": 1,
    "SIMULATOR_STOP_TIME": 1, "CC_MODE": 1,
    "ALPHA_RESUME_INTERVAL": 1, "RATE_DECREASE_INTERVAL": 1, "CLAMP_TARGET_RATE": 1, "RP_TIMER": 1,
    "EWMA_GAIN": 1, "FAST_RECOVERY_TIMES": 1, "RATE_AI": 1, "RATE_HAI": 1, "MIN_RATE": 1, "DCTCP_RATE_AI": 1,
    "ERROR_RATE_PER_LINK": 1, "L2_CHUNK_SIZE": 1, "L2_ACK_INTERVAL": 1, "L2_BACK_TO_ZERO": 1,
    "HAS_WIN": 1, "GLOBAL_T": 1, "VAR_WIN": 1, "FAST_REACT": 1, "U_TARGET": 1, "MI_THRESH": 1,
    "INT_MULTI": 1, "MULTI_RATE": 1, "SAMPLE_FEEDBACK": 1, "PINT_LOG_BASE": 1, "PINT_PROB": 1,
    "RATE_BOUND": 1, "ACK_HIGH_PRIO": 1, "LINK_DOWN": 3, "ENABLE_TRACE": 1,
    "KMAX_MAP": "map", "KMIN_MAP": "map", "PMAX_MAP": "map", "BUFFER_SIZE": 1,
    "QLEN_MON_START": 1, "QLEN_MON_END": 1, "PAUSE_TIME": 1, "DATA_RATE": 1, "LINK_DELAY": 1,
}

# third.cc's values for absent keys (None: no usable default — uninitialised or empty).
DEFAULTS: dict[str, str | None] = {
    "ENABLE_QCN": "1", "USE_DYNAMIC_PFC_THRESHOLD": "1", "PACKET_PAYLOAD_SIZE": "1000",
    "SIMULATOR_STOP_TIME": "3.01", "CC_MODE": "1", "ALPHA_RESUME_INTERVAL": "55", "RATE_DECREASE_INTERVAL": "4",
    "CLAMP_TARGET_RATE": "0", "RP_TIMER": None, "EWMA_GAIN": "0", "FAST_RECOVERY_TIMES": "5",
    "RATE_AI": None, "RATE_HAI": None, "MIN_RATE": "100Mb/s", "DCTCP_RATE_AI": "1000Mb/s",
    "ERROR_RATE_PER_LINK": "0", "L2_CHUNK_SIZE": "0", "L2_ACK_INTERVAL": "0", "L2_BACK_TO_ZERO": "0",
    "HAS_WIN": "1", "GLOBAL_T": "1", "VAR_WIN": "0", "FAST_REACT": "1", "U_TARGET": "0.95", "MI_THRESH": "5",
    "INT_MULTI": "1", "MULTI_RATE": "1", "SAMPLE_FEEDBACK": "0", "PINT_LOG_BASE": "1.05", "PINT_PROB": "1.0",
    "RATE_BOUND": "1", "ACK_HIGH_PRIO": "0", "ENABLE_TRACE": "1", "BUFFER_SIZE": "16",
    "QLEN_MON_START": "2000000000", "QLEN_MON_END": "2100000000",
    "FCT_OUTPUT_FILE": "fct.txt", "PFC_OUTPUT_FILE": "pfc.txt",
}

CC_NAMES = {1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp"}

# The congestion-control keys: how third.cc reads each (`number`: a double;
# `count` (with its bounds) and `flag`: an unsigned integer; `rate`: a
# DataRate string) and the CC_MODEs whose algorithm uses it (rdma-hw.cc).
# third.cc reads and hands over every one of them whatever CC_MODE is, so a
# value it cannot read stops ns-3 in every mode: the config stream fails on a
# number it cannot read (it never starts the run), and DataRate aborts on a
# rate it cannot parse (both measured on the ns-3 build). MIN_RATE, which
# every mode uses, is not here.
CC_KEYS: dict[str, tuple[str, tuple[int, int] | None, frozenset[int]]] = {
    "ALPHA_RESUME_INTERVAL": ("number", None, frozenset({1})),
    "RATE_DECREASE_INTERVAL": ("number", None, frozenset({1})),
    "RP_TIMER": ("number", None, frozenset({1})),
    "CLAMP_TARGET_RATE": ("flag", None, frozenset({1})),
    "FAST_RECOVERY_TIMES": ("count", (0, 1000), frozenset({1})),
    "EWMA_GAIN": ("number", None, frozenset({1, 8})),
    "RATE_AI": ("rate", None, frozenset({1, 3, 7})),
    "RATE_HAI": ("rate", None, frozenset({1, 7})),
    "DCTCP_RATE_AI": ("rate", None, frozenset({8})),
    "U_TARGET": ("number", None, frozenset({3})),
    "MI_THRESH": ("count", (0, 10**6), frozenset({3})),
    "FAST_REACT": ("flag", None, frozenset({3})),
    "MULTI_RATE": ("flag", None, frozenset({3})),
    "SAMPLE_FEEDBACK": ("flag", None, frozenset({3})),
    "INT_MULTI": ("count", (1, 1 << 16), frozenset({3})),
}

# Converted scenarios effectively have no event cap: ns-3 has none, and a
# simulated second of a 320-host fabric is billions of events.
MAX_EVENTS = 10**15


@dataclass
class Ns3Config:
    """A parsed config file: each key's value tokens and its line, in file order."""

    path: Path
    values: dict[str, list[str]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def has(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str) -> str | None:
        v = self.values.get(key)
        return v[0] if v else DEFAULTS.get(key)

    def where(self, key: str) -> str:
        return f"{key} (line {self.lines[key]})" if key in self.lines else f"{key} (absent; ns-3's default)"


@dataclass
class Topology:
    """What the converter needs from the topology file."""

    nodes: int
    switches: set[int]
    links: list[tuple[int, int, int, int, float]]  # a, b, rate bps, delay ps, error rate
    text: str  # normalised for the core: exact bps and ps
    verbatim_ok: bool  # the original file reads the same in the core (its units are unambiguous)


@dataclass
class Conversion:
    """A converted config: the native scenario and what the conversion found."""

    config_path: Path
    scenario: dict
    warnings: list[str]
    notes: list[str]  # where each file was found
    outputs: dict[str, Path]  # "fct", "pfc", ("qlen") -> where ns-3 would write them
    topology_path: Path
    flow_path: Path
    base_dir: Path  # the directory relative paths were resolved against
    topology: Topology
    stop_time: str | None = None  # SIMULATOR_STOP_TIME as the config writes it (seconds)
    #: The list `convert` made for `scenario["workload"]["flows"]` (see `load`).
    made_flows: list | None = field(default=None, repr=False, compare=False)

    def config_value(self, key: str) -> str | None:
        """A config value the run reports back as given (only SIMULATOR_STOP_TIME so far)."""
        return {"SIMULATOR_STOP_TIME": self.stop_time}.get(key)

    def load(self, base_dir: str | os.PathLike, source: str):
        """`scenario_from_dict(self.scenario, base_dir, source)`, but the flows
        `convert` made are handed over rather than copied (copying 100,000 took
        0.3 s) while `scenario` still holds that list and its flows still hold
        only text and whole numbers. The loaded scenario then shares the list
        with `scenario`: change the flows before loading, not after."""
        from rdmalab.scenario import _from_dict

        workload = self.scenario.get("workload")
        flows = workload.get("flows") if isinstance(workload, dict) else None
        fresh = flows is not None and flows is self.made_flows and _core.plain_flows(flows)
        return _from_dict(self.scenario, base_dir, source, flows if fresh else None)


def _refuse(problems: list[str], what: str) -> None:
    n = len(problems)
    head = f"{what} has {n} problem{'s' if n != 1 else ''}:"
    raise ScenarioError("\n".join([head] + [f"  - {p}" for p in problems]))


def read_config(path: str | os.PathLike) -> Ns3Config:
    """Tokenise a config as third.cc does; unknown keys and missing values become problems."""
    p = Path(path)
    if p.is_dir():
        raise ScenarioError(f"(config): `{p}` is a directory, not an ns-3 HPCC config file")
    try:
        text = p.read_text()
    except OSError as e:
        raise ScenarioError(f"(config): `{p}` cannot be read ({e.strerror}); "
                            f"ns-3 would spin forever on it, rdmalab stops") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"(config): `{p}` is not a text file") from None
    cfg = Ns3Config(path=p)
    tokens = [(tok, n) for n, line in enumerate(text.splitlines(), 1) for tok in line.split()]
    i = 0
    while i < len(tokens):
        key, line = tokens[i]
        i += 1
        arity = ARITY.get(key)
        if arity is None:
            if key.startswith("\ufeff"):
                # An editor's byte-order mark, invisible in the key it is glued to.
                cfg.problems.append(
                    f"{key[1:]} (line {line}): the file starts with a byte-order mark (U+FEFF), which ns-3 reads "
                    f"as part of this key and then skips it as unknown; save the file without one")
            else:
                cfg.problems.append(
                    f"{key if key.isprintable() else ascii(key)} (line {line}): unknown key; ns-3 skips unknown "
                    f"keys silently, rdmalab refuses them (check the spelling; every key it knows is in docs/hpcc.md)")
            while i < len(tokens) and tokens[i][1] == line:  # its values, on its line
                i += 1
            continue
        if arity == "map":
            if i >= len(tokens):
                cfg.problems.append(f"{key} (line {line}): needs a count and that many `rate value` pairs")
                break
            try:
                n = int(tokens[i][0])
                if not 0 <= n <= 64:
                    raise ValueError
            except ValueError:  # a negative count walked the tokens backwards forever
                cfg.problems.append(f"{key} (line {line}): `{tokens[i][0]}` is not a count of `rate value` pairs "
                                    f"(allowed: 0 to 64)")
                i += 1
                continue
            arity = 1 + 2 * n
        vals = [t for t, _ in tokens[i:i + arity]]
        i += arity
        if len(vals) < arity or any(v in ARITY for v in vals):
            cfg.problems.append(f"{key} (line {line}): needs {arity} value{'s' if arity != 1 else ''}, "
                                f"got {' '.join(vals) or 'none'}")
            continue
        if key in cfg.values:
            cfg.warnings.append(f"{key}: given twice (lines {cfg.lines[key]} and {line}); the last wins, as in ns-3")
        cfg.values[key] = vals
        cfg.lines[key] = line
    return cfg


def _candidates(value: str, config_path: Path, cwd: Path) -> list[tuple[Path, str]]:
    p = Path(value)
    if p.is_absolute():
        return [(Path("/"), "an absolute path")]
    cdir = config_path.resolve().parent
    out: list[tuple[Path, str]] = []
    for base, how in ((cwd, "relative to the current directory, as ns-3 reads it"),
                      (cdir, "relative to the config file's directory"),
                      (cdir.parent, "relative to the config file's parent directory (ns-3's run directory "
                                    "when the config is in mix/)")):
        if all(base != b for b, _ in out):
            out.append((base, how))
    return out


def _find_input(cfg: Ns3Config, key: str, cwd: Path, notes: list[str]) -> tuple[Path, Path] | None:
    """(file, the base it was found under) for an input key, or a problem."""
    value = cfg.get(key)
    if value is None:
        cfg.problems.append(f"{key}: missing; ns-3 needs it (it would read an empty file name)")
        return None
    tried = []
    for base, how in _candidates(value, cfg.path, cwd):
        f = base / value
        tried.append(str(f))
        if f.is_file():
            notes.append(f"{key} {value}: {f} ({how})")
            return f, base
    cfg.problems.append(f"{cfg.where(key)}: `{value}` not found (looked for {', '.join(tried)})")
    return None


def _read_text(cfg: Ns3Config, key: str, f: Path) -> str | None:
    try:
        text = f.read_text()
    except (OSError, UnicodeDecodeError) as e:
        cfg.problems.append(f"{key}: `{f}` cannot be read ({getattr(e, 'strerror', None) or e})")
        return None
    if text.startswith("\ufeff"):
        # Invisible in a message quoting the first line, which it makes unreadable.
        cfg.problems.append(f"{key}: `{f}` starts with a byte-order mark (U+FEFF), which ns-3 cannot read as "
                            f"a number; save the file without one")
        return None
    return text


_SAFE_RATE = ("bps", "b/s", "kbps", "Kbps", "kb/s", "Kb/s", "Mbps", "Mb/s", "Gbps", "Gb/s")
_SAFE_TIME = ("ps", "ns", "us", "ms", "s")


def parse_topology(text: str, where: str) -> Topology:
    """Read a topology file as third.cc does (a token stream: `N S L`, S ids, L × 5 tokens)."""
    toks = text.split()

    def fail(msg: str):
        raise ScenarioError(f"{where}: {msg}")

    try:
        n, s, nl = (int(t) for t in toks[:3])
    except ValueError:
        fail(f"the first line must be `nodes switches links`, not `{' '.join(toks[:3])}`")
    if not (0 < n <= MAX_NODES and 0 <= s <= n and nl >= 0):
        fail(f"`{n} {s} {nl}`: allowed: 1 to {MAX_NODES} nodes (rdmalab's limit), at most that many switches, "
             f"a link count of 0 or more")
    if len(toks) < 3 + s + 5 * nl:
        fail(f"says {s} switches and {nl} links but ends early; each link is `a b rate delay error_rate`")
    try:
        switches = {int(t) for t in toks[3:3 + s]}
    except ValueError:
        fail("the switch ids must be integers")
    if any(not 0 <= x < n for x in switches):
        fail(f"a switch id is outside 0..{n - 1}")
    links = []
    verbatim = True
    pos = 3 + s
    out = [f"{n} {s} {nl}", " ".join(toks[3:3 + s])]
    for k in range(nl):
        a, b, rate, delay, err = toks[pos:pos + 5]
        pos += 5
        try:
            ia, ib = int(a), int(b)
            bps = parse_rate_bps(rate)
            ps = parse_time_ps(delay)
            e = float(err)
        except ValueError as ex:
            fail(f"link {k + 1} `{a} {b} {rate} {delay} {err}`: {ex}")
        if not (0 <= ia < n and 0 <= ib < n):
            fail(f"link {k + 1} `{a} {b} ...`: a node id is outside 0..{n - 1}")
        if bps <= 0:
            fail(f"link {k + 1} `{a} {b} {rate} ...`: the rate must be above 0")
        if not 0.0 <= e <= 1.0:
            fail(f"link {k + 1} `{a} {b} {rate} {delay} {err}`: the error rate must be from 0 to 1")
        verbatim &= rate.lstrip("0123456789.eE+-") in _SAFE_RATE and delay.lstrip("0123456789.eE+-") in _SAFE_TIME
        links.append((ia, ib, bps, ps, e))
        out.append(f"{ia} {ib} {bps}bps {ps}ps {e!r}")
    return Topology(nodes=n, switches=switches, links=links, text="\n".join(out) + "\n", verbatim_ok=verbatim)


def ns3_max_rtt_ns(topo: Topology, payload: int) -> int:
    """The largest host-to-host base RTT as the ns-3 simulator's third.cc computes
    it (maxRtt, used as every QP's RTT and, times the host rate, as the window
    with GLOBAL_T 1): a BFS from each host through switches, neighbours in
    node-id order, 2 x the path's propagation delay (ns) + one `payload`-byte
    serialisation per hop (integer ns).

    Hosts are leaves of that search (only switches are expanded), so two hosts
    with the same links to the same switches find every other node along the
    same paths: one search per such group gives every member's answer. A fat
    tree needs one per rack instead of one per host (the 320-host tree: 6 ms
    instead of 67 ms; the work grew with hosts × nodes)."""
    nbrs = _neighbours(topo)
    hosts = [n for n in range(topo.nodes) if n not in topo.switches]
    best = 0
    searched: set[tuple] = set()
    for h in hosts:
        # Links to switches only: a link to another host leads nowhere further.
        group = tuple(x for x in nbrs.get(h, []) if x[0] in topo.switches)
        if len(group) == len(nbrs.get(h, [])) and group in searched:
            continue
        searched.add(group)
        best = max(best, _max_rtt_from(h, nbrs, topo.switches, hosts, payload))
    return best


def _neighbours(topo: Topology) -> dict[int, list[tuple[int, int, int]]]:
    """Per node, its links as (neighbour, bps, delay in ns), in neighbour-id order."""
    nbrs: dict[int, list[tuple[int, int, int]]] = {}
    for a, b, bps, ps, _ in topo.links:
        nbrs.setdefault(a, []).append((b, bps, ps // 1000))
        nbrs.setdefault(b, []).append((a, bps, ps // 1000))
    for v in nbrs.values():
        v.sort()
    return nbrs


def _max_rtt_from(h: int, nbrs: dict, switches: set[int], hosts: list[int], payload: int) -> int:
    """ns-3's RTT from host `h` to the farthest host its BFS reaches."""
    delay, tx = {h: 0}, {h: 0}
    queue = [h]
    for now in queue:
        for nxt, bps, d in nbrs.get(now, []):
            if nxt not in delay:
                delay[nxt] = delay[now] + d
                tx[nxt] = tx[now] + payload * 1_000_000_000 * 8 // bps
                if nxt in switches:
                    queue.append(nxt)
    return max((2 * delay[o] + tx[o] for o in hosts if o in delay), default=0)


def unread_flow_lines(text: str) -> tuple[int, int | None, int]:
    """(non-blank lines after the flows the count line counts, the first
    one's line number, the count): ns-3 never reads them."""
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.split()]
    try:
        count = int(lines[0][1].split()[0]) if lines else 0
    except ValueError:
        return 0, None, 0
    rest = lines[1 + max(count, 0):]
    return len(rest), (rest[0][0] if rest else None), count


def read_flows(text: str, where: str, topo: Topology, problems: list[str]) -> _core.Ns3Flows | ReferenceFlows:
    """The first F flows of a flow file, read by the core (100,000 flows in
    Python took a second); `parse_flows` reads the files the core gives up
    on (text that is not ASCII, integers beyond 64 bits or 640 characters),
    with the same messages. Problems are added to `problems` in file order."""
    read = _core.read_ns3_flows(text, where, topo.nodes, sorted(topo.switches))
    if read is None:
        return ReferenceFlows(parse_flows(text, where, topo, problems))
    problems.extend(read.problems)
    return read


class ReferenceFlows:
    """`parse_flows`' flows with the methods of the core's `Ns3Flows`: the
    reference the core is tested against, and what holds a file it gave up on."""

    def __init__(self, flows: list[dict]):
        self.flows = flows

    def __len__(self) -> int:
        return len(self.flows)

    def first_pg(self) -> tuple[int, int] | None:
        return (self.flows[0]["line"], self.flows[0]["pg"]) if self.flows else None

    def first_other_pg(self) -> tuple[int, int] | None:
        other = next((f for f in self.flows if f["pg"] != self.flows[0]["pg"]), None)
        return None if other is None else (other["line"], other["pg"])

    def drop_late(self, stop_ns: int) -> tuple[int, int | None]:
        late = [f for f in self.flows if f["start_ns"] >= stop_ns]
        self.flows = [f for f in self.flows if f["start_ns"] < stop_ns]
        return len(late), late[0]["line"] if late else None

    def sorted_by_start(self) -> bool:
        return not any(b["start_ns"] < a["start_ns"] for a, b in zip(self.flows, self.flows[1:]))

    def scenario_flows(self) -> list[dict]:
        return [_flow(f) for f in self.flows]


def parse_flows(text: str, where: str, topo: Topology, problems: list[str]) -> list[dict]:
    """The first F flows of a flow file (`F`, then `src dst pg dport size start_s` lines):
    the reference for the core's reader (`read_flows`)."""
    lines = [(n, ln.split()) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        problems.append(f"{where}: empty; the first line must be the number of flows")
        return []
    try:
        count = int(lines[0][1][0])
        if count < 0 or len(lines[0][1]) != 1:
            raise ValueError
    except ValueError:
        problems.append(f"{where} line {lines[0][0]}: `{' '.join(lines[0][1])}` — the first line must be the "
                        f"number of flows")
        return []
    body = lines[1:1 + count]
    if len(body) < count:
        problems.append(f"{where}: the first line says {count} flows but only {len(body)} follow "
                        f"(ns-3 reads exactly that many)")
    flows = []
    for n, f in body:
        def bad(msg: str):
            problems.append(f"{where} line {n} `{' '.join(f)}`: {msg}")

        if len(f) != 6:
            bad("must be `src dst pg dport size start_time_s`")
            continue
        try:
            src, dst, pg, dport, size = (int(x) for x in f[:5])
            start_ns = seconds_to_ns(f[5])
        except ValueError:
            bad("src, dst, pg, dport and size must be integers and the start a number of seconds")
            continue
        hosts_ok = True
        for role, x in (("src", src), ("dst", dst)):
            if not 0 <= x < topo.nodes or x in topo.switches:
                bad(f"{role} {x} is not a host of the topology (ns-3 asserts it)")
                hosts_ok = False
        if not hosts_ok:
            continue
        if src == dst:
            bad("src and dst are the same host")
            continue
        if not 0 <= dport <= 65535 or size < 0 or not 0 <= pg <= 7:
            bad("dport must be 0-65535, size ≥ 0 and pg 0-7")
            continue
        flows.append({"src": src, "dst": dst, "pg": pg, "dport": dport, "size": size, "start_ns": start_ns,
                      "line": n})
    return flows


class _Values:
    """Typed access to config values; bad values become problems naming the
    key (in `problems`: the config's own unless given)."""

    def __init__(self, cfg: Ns3Config, problems: list[str] | None = None):
        self.cfg = cfg
        self.problems = cfg.problems if problems is None else problems

    def _bad(self, key: str, msg: str) -> None:
        self.problems.append(f"{self.cfg.where(key)}: `{self.cfg.get(key)}` — {msg}")

    def int(self, key: str, lo: int = 0, hi: int = 2**64 - 1) -> int | None:
        v = self.cfg.get(key)
        try:
            x = int(v)
            if lo <= x <= hi:
                return x
        except (TypeError, ValueError):
            pass
        self._bad(key, f"must be an integer from {lo} to {hi}")
        return None

    def float(self, key: str, lo: float = 0.0) -> float | None:
        v = self.cfg.get(key)
        try:
            x = float(v)
            if lo <= x < 1e15:  # finite, and no time or count in a config is larger
                return x
        except (TypeError, ValueError):
            pass
        self._bad(key, f"must be a number from {lo:g} to 1e15")
        return None

    def flag(self, key: str) -> bool | None:
        x = self.int(key)
        return None if x is None else x != 0

    def rate(self, key: str) -> int | None:
        v = self.cfg.get(key)
        if v is None:
            # third.cc leaves the string empty, and ns-3's DataRate("") parses as 0 bit/s.
            self.problems.append(f"{key}: missing; ns-3 then runs with 0 bit/s (its DataRate(\"\") parses as 0), "
                                 f"a step rdmalab does not take (at least 1 bit/s) — set it, e.g. `{key} 50Mb/s`")
            return None
        try:
            bps = parse_rate_bps(v)
        except ValueError as e:
            self._bad(key, str(e))
            return None
        if bps <= 0:
            self._bad(key, "must be greater than 0")
            return None
        return bps

    def rate_map(self, key: str) -> dict[int, str]:
        """`n r1 v1 r2 v2 ...` -> {rate_bps: value token}."""
        vals = self.cfg.values.get(key)
        if not vals:
            return {}
        out = {}
        for r, v in zip(vals[1::2], vals[2::2]):
            try:
                out[int(r)] = v
            except ValueError:
                self.problems.append(f"{self.cfg.where(key)}: rate `{r}` must be an integer in bit/s")
        return out


def _cc_value(v: _Values, key: str):
    """A congestion-control key's value, read and checked as a CC_MODE that uses it does."""
    kind, bounds, _ = CC_KEYS[key]
    if kind == "number":
        return v.float(key)
    if kind == "count":
        return v.int(key, *bounds)
    if kind == "flag":
        return v.flag(key)
    return v.rate(key)


_NS3_DOUBLE = re.compile(r"[+-]?(?:[0-9]|\.[0-9])")
_NS3_UNSIGNED = re.compile(r"[+-]?([0-9]+)")


def ns3_cannot_read(kind: str, text: str) -> str | None:
    """Why third.cc cannot read `text` as a CC key of `kind` (see CC_KEYS),
    or None when it can (whether or not the value makes sense)."""
    if kind == "rate":
        if ns3_data_rate_parses(text):
            return None
        return f"not an ns-3 data rate; ns-3 aborts on it (`Could not parse rate: {text}`)"
    if kind == "number":
        if _NS3_DOUBLE.match(text):
            return None
        return "not a number; ns-3 cannot read it either (its config reader fails there, and ns-3 hangs unstarted)"
    m = _NS3_UNSIGNED.match(text)
    if m and int(m.group(1)) <= 2**32 - 1:
        return None
    return ("not an integer ns-3 can read (it reads an unsigned 32-bit one): its config reader fails there, and "
            "ns-3 hangs unstarted")


def _mode_names(modes) -> str:
    names = [f"{m} ({CC_NAMES[m].upper()})" for m in sorted(modes)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _check_other_modes_keys(cfg: Ns3Config, cc_mode: int, warnings: list[str]) -> None:
    """The congestion-control keys CC_MODE `cc_mode` does not use, as ns-3
    treats them: accepted and ignored (run.py writes every mode's keys into
    every config), said in one warning. A value ns-3 cannot read is refused,
    as it stops ns-3 too; one the mode that uses the key would refuse (a
    negative interval, a rate of 0) is a warning of its own, with that
    mode's message: ignored, but not silently."""
    unused = [k for k, (_, _, modes) in CC_KEYS.items() if cfg.has(k) and cc_mode not in modes]
    if not unused:
        return
    mode = _mode_names([cc_mode])
    for key in unused:
        kind, _, modes = CC_KEYS[key]
        why = ns3_cannot_read(kind, cfg.get(key))
        if why is not None:
            cfg.problems.append(f"{cfg.where(key)}: `{cfg.get(key)}` — {why}, although CC_MODE {mode} does not "
                                f"use {key}")
            continue
        refused: list[str] = []
        _cc_value(_Values(cfg, refused), key)
        warnings += [f"{msg}; ignored with CC_MODE {mode}, as in ns-3, but CC_MODE {_mode_names(modes)}, which "
                     f"{'uses' if len(modes) == 1 else 'use'} it, would refuse it" for msg in refused]
    warnings.append(f"{cfg.where('CC_MODE')}: {mode} does not use {', '.join(unused)} (keys of other modes): "
                    f"ignored, as in ns-3")


def convert(
    config_path: str | os.PathLike,
    *,
    rto: str = "off",
    seed: int = 1,
    sample_interval: str = "off",
    cwd: str | os.PathLike | None = None,
) -> Conversion:
    """Convert an ns-3 HPCC config (and the files it names) to a native scenario.

    `rto`: `off` (ns-3 has no retransmission timeout) or a duration such as
    `1ms`. `sample_interval`: rdmalab's own per-QP and per-port samples
    (`off`: none, as ns-3 has none). Raises ScenarioError with every problem.
    """
    cfg = read_config(config_path)
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    v = _Values(cfg)
    warnings = list(cfg.warnings)
    notes: list[str] = []

    def warn(key: str, msg: str) -> None:
        warnings.append(f"{cfg.where(key)}: {msg}")

    # ---------------------------------------------------------------- files
    topo_found = _find_input(cfg, "TOPOLOGY_FILE", cwd, notes)
    flow_found = _find_input(cfg, "FLOW_FILE", cwd, notes)
    topo = None
    if topo_found:
        text = _read_text(cfg, "TOPOLOGY_FILE", topo_found[0])
        if text is not None:
            try:
                topo = parse_topology(text, f"TOPOLOGY_FILE `{topo_found[0]}`")
            except ScenarioError as e:
                cfg.problems.append(str(e))
            # The core's rule (it warns with it on a native scenario's hpcc_file topology).
            past = _core.hpcc_links_past_count(text) if topo is not None else None
            if past is not None:
                unread, line, _, count = past
                warn("TOPOLOGY_FILE", f"`{topo_found[0]}`: {unread} link line{'s' if unread != 1 else ''} after the "
                                      f"{count} links its first line counts (first on line {line}) "
                                      f"{'are' if unread != 1 else 'is'} not read; ns-3 reads exactly that many, "
                                      f"and so does rdmalab: raise the count to use "
                                      f"{'them' if unread != 1 else 'it'}")
    flows: _core.Ns3Flows | ReferenceFlows = ReferenceFlows([])
    if flow_found and topo is not None:
        text = _read_text(cfg, "FLOW_FILE", flow_found[0])
        if text is not None:
            flows = read_flows(text, f"FLOW_FILE `{flow_found[0]}`", topo, cfg.problems)
            # The core's reader counted them in its own pass.
            unread, line, count = (flows.unread_lines() if isinstance(flows, _core.Ns3Flows)
                                   else unread_flow_lines(text))
            if unread:
                warn("FLOW_FILE", f"`{flow_found[0]}`: {unread} line{'s' if unread != 1 else ''} after the {count} "
                                  f"flows its first line counts (first on line {line}) are not read; ns-3 reads "
                                  f"exactly that many, and so does rdmalab")
    base = topo_found[1] if topo_found else cwd

    # ---------------------------------------------------------------- keys ns-3 ignores, and what rdmalab does not produce
    for key, why in (
        ("DATA_RATE", "ns-3 parses it and never uses it; link rates come from the topology file"),
        ("LINK_DELAY", "ns-3 parses it and never uses it; link delays come from the topology file"),
        ("PAUSE_TIME", "ns-3 only writes it into PFC frames; a pause lasts until its RESUME, in ns-3 and rdmalab"),
        ("USE_DYNAMIC_PFC_THRESHOLD", "ns-3's switch buffer always uses the dynamic PFC threshold, whatever "
                                      "this says; so does rdmalab"),
    ):
        if cfg.has(key):
            warn(key, f"ignored: {why}")
    trace_on = v.flag("ENABLE_TRACE")
    if trace_on:
        warn("ENABLE_TRACE", "the binary packet trace (TRACE_OUTPUT_FILE, read by trace_reader) is not produced; "
                             "rdmalab writes fct/pfc/qlen files and its own tables instead")
    for key in ("TRACE_FILE", "TRACE_OUTPUT_FILE"):
        if cfg.has(key):
            warn(key, "ignored: rdmalab does not write ns-3's binary packet trace"
                 + ("" if trace_on else " (and ENABLE_TRACE is 0, so ns-3 writes none either)"))

    cc_mode = v.int("CC_MODE")
    if cc_mode is not None and cc_mode not in CC_NAMES:
        if cc_mode == 10:
            cfg.problems.append(f"{cfg.where('CC_MODE')}: `10` (HPCC-PINT) is not implemented in rdmalab; "
                                f"use 3 (HPCC with exact INT)")
        else:
            cfg.problems.append(f"{cfg.where('CC_MODE')}: `{cc_mode}` — allowed: 1 (DCQCN), 3 (HPCC), 7 (TIMELY), "
                                f"8 (DCTCP); ns-3 has no other mode either")
        cc_mode = None
    if cc_mode != 10:
        for key in ("PINT_LOG_BASE", "PINT_PROB"):
            if cfg.has(key):
                warn(key, "ignored: ns-3 uses it only with CC_MODE 10 (HPCC-PINT)")

    # ---------------------------------------------------------------- NIC
    payload = v.int("PACKET_PAYLOAD_SIZE", 64, 9000)
    ack_interval = v.int("L2_ACK_INTERVAL")
    ack_every = None
    if ack_interval is not None and payload:
        if ack_interval == 0:
            cfg.problems.append(f"{cfg.where('L2_ACK_INTERVAL')}: `0` — ns-3 then sends no ACKs and no flow ever "
                                f"completes; use 1 (an ACK per packet)")
        elif ack_interval == 1:
            ack_every = 1
        elif ack_interval % payload == 0:
            ack_every = ack_interval // payload
            warn("L2_ACK_INTERVAL", f"ACK every {ack_every} packets (nic.ack_every) and at each message's end; "
                                    f"ns-3 ACKs when the expected byte offset is a multiple of {ack_interval}")
        else:
            cfg.problems.append(f"{cfg.where('L2_ACK_INTERVAL')}: `{ack_interval}` — rdmalab ACKs every N packets: "
                                f"use 1 or a multiple of PACKET_PAYLOAD_SIZE ({payload})")
    chunk = v.int("L2_CHUNK_SIZE")
    if chunk and ack_interval:
        if ack_interval == 1 or chunk % ack_interval == 0:
            warn("L2_CHUNK_SIZE", "accepted and ignored: ns-3 also ACKs at chunk boundaries, which adds nothing "
                                  "when every packet (or every chunk boundary already) is ACKed, and with "
                                  "L2_BACK_TO_ZERO 0 chunks do not change go-back-N")
        else:
            cfg.problems.append(f"{cfg.where('L2_CHUNK_SIZE')}: `{chunk}` — ns-3 would add ACKs at chunk "
                                f"boundaries between the L2_ACK_INTERVAL ones; rdmalab does not model that "
                                f"(use 0, or a multiple of L2_ACK_INTERVAL)")
    if v.flag("L2_BACK_TO_ZERO"):
        cfg.problems.append(f"{cfg.where('L2_BACK_TO_ZERO')}: `1` (go back to the chunk start) is not implemented; "
                            f"rdmalab does go-back-N (L2_BACK_TO_ZERO 0)")
    if v.flag("RATE_BOUND") is False:
        cfg.problems.append(f"{cfg.where('RATE_BOUND')}: `0` (send at line rate whatever the CC rate) is not "
                            f"implemented; rdmalab always paces each QP at its rate (RATE_BOUND 1)")
    has_win = v.flag("HAS_WIN")
    var_win = v.flag("VAR_WIN")
    global_t = v.int("GLOBAL_T")
    ack_high = v.flag("ACK_HIGH_PRIO")
    first, other = flows.first_pg(), flows.first_other_pg()
    data_class = 3
    if other is not None:
        cfg.problems.append(f"FLOW_FILE line {other[0]}: pg {other[1]} differs from line "
                            f"{first[0]}'s pg {first[1]}; rdmalab puts all data in one class "
                            f"(nic.data_class), so every flow must use the same pg")
    elif first is not None:
        data_class = first[1]
        if data_class == 0:
            cfg.problems.append(f"FLOW_FILE line {first[0]}: pg 0 is the control class (strict priority, "
                                f"never paused); data must use pg 1-7 (traffic_gen.py writes 3)")
    if rto not in ("off", None):
        notes.append(f"retransmission timeout {rto} (ns-3 has none; --rto off reproduces that)")
    nic = {
        "framing": "ns3-hpcc",
        "mtu": f"{payload}B" if payload else None,
        "ack_every": ack_every,
        "cnp": "ack_flag",
        "rto": rto or "off",
        "data_class": data_class,
        # ns-3's switches queue ACKs with their flow's data whatever ACK_HIGH_PRIO says
        # (third.cc never sets SwitchNode's AckHighPrio); it only picks which class's
        # PFC pause holds the NIC's ACK queue: 0 (never paused) or 3.
        "ack_class": "data",
        "pfc_holds_acks": not ack_high and data_class == 3,
        "window": "bdp" if has_win else "none",
        "window_scales_with_rate": bool(var_win),
        # ns-3's HPCC changes rate through ChangeRate (the next departure moves);
        # its DCQCN, TIMELY and DCTCP assign m_rate, which counts from the packet after next.
        "rate_change": "immediate" if cc_mode == 3 else "next_packet",
        # Its RdmaEgressQueue's round robin: creation order, pointer, compaction.
        "qp_scheduler": "ns3-hpcc",
        # GLOBAL_T 1: ns-3's own maxRtt (and so its maxBdp as the window), computed its way.
        "base_rtt": ("path" if global_t != 1 else
                     f"{ns3_max_rtt_ns(topo, payload or 1000)}ns" if topo is not None else "fabric_max"),
        "nack_repeat_interval": "500us",
    }

    # ---------------------------------------------------------------- switches
    qcn = v.flag("ENABLE_QCN")
    kmin, kmax, pmax = v.rate_map("KMIN_MAP"), v.rate_map("KMAX_MAP"), v.rate_map("PMAX_MAP")
    thresholds = []
    if topo is not None:
        rates = sorted({bps for a, b, bps, _, _ in topo.links if a in topo.switches or b in topo.switches})
        for r in rates:
            missing = [k for k, m in (("KMIN_MAP", kmin), ("KMAX_MAP", kmax), ("PMAX_MAP", pmax)) if r not in m]
            for k in missing:
                cfg.problems.append(f"{cfg.where(k)}: no entry for {r} b/s ({rate_text(r)}), the rate of a switch "
                                    f"port in TOPOLOGY_FILE; ns-3 asserts `must set {k.split('_')[0].lower()} for each link "
                                    f"speed`")
            if missing:
                continue
            try:
                lo, hi, p = int(kmin[r]), int(kmax[r]), float(pmax[r])
            except ValueError:
                cfg.problems.append(f"KMIN_MAP/KMAX_MAP/PMAX_MAP: the values for {r} b/s must be KB integers and a "
                                    f"probability, not {kmin[r]}/{kmax[r]}/{pmax[r]}")
                continue
            thresholds.append({"rate": rate_text(r), "kmin": f"{lo * 1000}B", "kmax": f"{hi * 1000}B", "pmax": p})
    buffer_mb = v.int("BUFFER_SIZE", 1)
    switch = {
        "buffer": f"{buffer_mb}MiB" if buffer_mb else None,
        "int": cc_mode == 3,
        "pfc": {"enabled": True, "alpha": 0.125, "reserve": "4KiB", "resume_offset": "3KiB", "headroom": "auto"},
        "ecn": {"enabled": bool(qcn), "thresholds": thresholds},
        # Its switches' own hash and next-hop order: every flow takes ns-3's path.
        "ecmp": "ns3-hpcc",
    }

    # ---------------------------------------------------------------- congestion control
    cc: dict = {}
    min_rate = v.rate("MIN_RATE")
    if cc_mode == 1:
        g = v.float("EWMA_GAIN")
        if g == 0:
            cfg.problems.append(f"{cfg.where('EWMA_GAIN')}: DCQCN's g is 0 (ns-3's default `1/16` is integer "
                                f"division); set it, e.g. `EWMA_GAIN 0.00390625`")
        if not cfg.has("RP_TIMER"):
            cfg.problems.append("RP_TIMER: missing; ns-3 leaves it uninitialised — set it, e.g. `RP_TIMER 300` (µs)")
        rp = v.float("RP_TIMER") if cfg.has("RP_TIMER") else None
        alpha, dec = v.float("ALPHA_RESUME_INTERVAL"), v.float("RATE_DECREASE_INTERVAL")
        cc = {"algorithm": "dcqcn", "params": {
            "g": g, "alpha_period": _us(alpha), "decrease_period": _us(dec), "increase_period": _us(rp),
            "fast_recovery_stages": _cc_value(v, "FAST_RECOVERY_TIMES"),
            "rate_ai": _rate(v.rate("RATE_AI")), "rate_hai": _rate(v.rate("RATE_HAI")), "min_rate": _rate(min_rate),
            "clamp_target_rate": v.flag("CLAMP_TARGET_RATE"), "rate_on_first_cnp": 1.0, "byte_counter": "0B"}}
    elif cc_mode == 3:
        if v.flag("MULTI_RATE") is not False:
            cfg.problems.append(f"{cfg.where('MULTI_RATE')}: `1` (a rate per hop) is not implemented; rdmalab's "
                                f"HPCC is ns-3's single-rate form: set `MULTI_RATE 0`")
        if v.flag("SAMPLE_FEEDBACK"):
            cfg.problems.append(f"{cfg.where('SAMPLE_FEEDBACK')}: `1` (skip per-ACK INT when the queue is empty) "
                                f"is not implemented; set `SAMPLE_FEEDBACK 0`")
        # ns-3 always quantises its 8-byte INT hop records (INT_MULTI defaults to 1).
        switch["int_multi"] = _cc_value(v, "INT_MULTI")
        cc = {"algorithm": "hpcc", "params": {
            "eta": v.float("U_TARGET"), "max_stage": _cc_value(v, "MI_THRESH"), "rate_ai": _rate(v.rate("RATE_AI")),
            "min_rate": _rate(min_rate), "fast_react": v.flag("FAST_REACT"),
            # The window comes from nic.window (HAS_WIN, VAR_WIN) and T from nic.base_rtt (GLOBAL_T).
            "window": False, "base_rtt": "0ns"}}
    elif cc_mode == 7:
        cc = {"algorithm": "timely", "params": {
            "rate_ai": _rate(v.rate("RATE_AI")), "rate_hai": _rate(v.rate("RATE_HAI")), "min_rate": _rate(min_rate),
            # ns-3 hard-codes these (rdma-hw.cc); they are also rdmalab's defaults.
            "alpha": 0.875, "beta": 0.8, "t_low": "50us", "t_high": "500us", "min_rtt": "20us", "hai_threshold": 5}}
    elif cc_mode == 8:
        g = v.float("EWMA_GAIN")
        if g == 0:
            cfg.problems.append(f"{cfg.where('EWMA_GAIN')}: DCTCP's g is 0 (ns-3's default `1/16` is integer "
                                f"division); set it, e.g. `EWMA_GAIN 0.0625`")
        cc = {"algorithm": "dctcp", "params": {
            "g": g, "rate_ai": _rate(v.rate("DCTCP_RATE_AI")), "min_rate": _rate(min_rate)}}
    if cc_mode is not None:
        _check_other_modes_keys(cfg, cc_mode, warnings)

    # ---------------------------------------------------------------- links, time, records
    links = []
    err = v.float("ERROR_RATE_PER_LINK")
    if err and topo is not None:
        if err > 1:
            cfg.problems.append(f"{cfg.where('ERROR_RATE_PER_LINK')}: `{err}` — a loss probability is at most 1")
        else:
            links = [{"between": [a, b], "loss": err} for a, b, _, _, e in topo.links if e <= 0]
    down = cfg.values.get("LINK_DOWN", ["0", "0", "0"])
    link_down = None  # (time ns, a, b): ns-3 takes the link down for good and recomputes routes at once
    if down != ["0", "0", "0"]:
        try:
            t_us, a, b = float(down[0]), int(down[1]), int(down[2])
        except (ValueError, IndexError):
            t_us, a, b = None, None, None
            cfg.problems.append(f"{cfg.where('LINK_DOWN')}: `{' '.join(down)}` — must be `time_us node_a node_b`")
        if t_us is not None and not math.isfinite(t_us):
            cfg.problems.append(f"{cfg.where('LINK_DOWN')}: `{' '.join(down)}` — the time must be a finite "
                                f"number of µs")
            t_us = None
        if t_us is not None and t_us <= 0:
            warn("LINK_DOWN", f"`{' '.join(down)}`: ignored — ns-3 takes a link down only when the time is > 0")
        elif t_us is not None and topo is not None:
            if not any({x, y} == {a, b} for x, y, _, _, _ in topo.links):
                cfg.problems.append(f"{cfg.where('LINK_DOWN')}: `{' '.join(down)}` — no link joins nodes {a} and {b} "
                                    f"in the topology")
            else:
                # third.cc: Simulator::Schedule(Seconds(2) + MicroSeconds(t), TakeDownLink, a, b)
                link_down = (2_000_000_000 + round(t_us * 1000), a, b)
    stop = cfg.get("SIMULATOR_STOP_TIME")
    try:
        stop_ns = seconds_to_ns(stop)
        if stop_ns <= 0:
            raise ValueError
    except (TypeError, ValueError):
        cfg.problems.append(f"{cfg.where('SIMULATOR_STOP_TIME')}: `{stop}` — must be a positive number of seconds")
        stop_ns = None
    if stop_ns is not None:
        late, first_late = flows.drop_late(stop_ns)
        if late:
            warnings.append(f"FLOW_FILE: {late} flows start at or after SIMULATOR_STOP_TIME (first on line "
                            f"{first_late}); they never start, in ns-3 or rdmalab")
    if not flows.sorted_by_start():
        warnings.append("FLOW_FILE: not sorted by start time; ns-3 requires that (it schedules flows in file "
                        "order), rdmalab starts each at its own time")

    outputs: dict[str, Path] = {}
    for kind, key in (("fct", "FCT_OUTPUT_FILE"), ("pfc", "PFC_OUTPUT_FILE"), ("qlen", "QLEN_MON_FILE")):
        value = cfg.get(key)
        if value is not None:
            outputs[kind] = Path(value) if Path(value).is_absolute() else base / value
    # An output written over an input (or over another output) would destroy
    # it or mix two files: refuse before anything runs.
    inputs = {"the config file": Path(config_path)}
    for key, found in (("TOPOLOGY_FILE", topo_found), ("FLOW_FILE", flow_found)):
        if found:
            inputs[key] = found[0]
    trace = cfg.get("TRACE_FILE")
    if trace is not None:  # not read by rdmalab, but still the user's file
        for b, _ in _candidates(trace, cfg.path, cwd):
            if (b / trace).is_file():
                inputs["TRACE_FILE"] = b / trace
                break
    out_keys = {"fct": "FCT_OUTPUT_FILE", "pfc": "PFC_OUTPUT_FILE", "qlen": "QLEN_MON_FILE"}
    seen: dict[Path, str] = {p.resolve(): k for k, p in inputs.items()}
    for kind, path in outputs.items():
        key = out_keys[kind]
        other = seen.get(path.resolve())
        if other is not None:
            cfg.problems.append(f"{cfg.where(key)}: `{cfg.get(key)}` is the same file as {other}; "
                                f"each output needs a file of its own, apart from the inputs")
        elif path.is_dir():
            cfg.problems.append(f"{cfg.where(key)}: `{cfg.get(key)}` is a directory; allowed: a file to write")
        seen.setdefault(path.resolve(), key)
    records: dict = {"sample_interval": sample_interval}
    if "qlen" in outputs:
        a, b = v.int("QLEN_MON_START"), v.int("QLEN_MON_END")
        if a is not None and b is not None:
            if b < a:
                cfg.problems.append(f"{cfg.where('QLEN_MON_END')}: `{b}` is before QLEN_MON_START `{a}`")
            records["qlen_monitor"] = {"start": f"{a}ns", "end": f"{b}ns"}
    else:
        for key in ("QLEN_MON_START", "QLEN_MON_END"):
            if cfg.has(key):
                warn(key, "no QLEN_MON_FILE, so no queue-length file is written")
        mon_start = v.int("QLEN_MON_START")
        if stop_ns is not None and mon_start is not None and stop_ns > mon_start:
            # third.cc always schedules its monitor and fopen("") gives it a NULL file.
            warnings.append(f"QLEN_MON_FILE: not set; ns-3 itself crashes (segfault) at QLEN_MON_START "
                            f"({mon_start} ns) when its queue monitor writes to the file it could not open; "
                            f"rdmalab runs on and writes no queue-length file")

    if cfg.problems:
        _refuse(cfg.problems, f"{cfg.path}")

    scenario = {
        "name": cfg.path.stem if cfg.path.stem != "config" else cfg.path.resolve().parent.name or "config",
        "description": f"converted from the ns-3 HPCC config {cfg.path} by `rdmalab hpcc convert`",
        "seed": seed,
        "duration": ps_text(stop_ns * 1000),
        # ns-3 always runs to SIMULATOR_STOP_TIME; that matters only while the
        # queue monitor samples, so only then does rdmalab keep going.
        "run_to_duration": "qlen_monitor" in records,
        # ns-3.17 cuts every frame's time on a link and in the pacer to whole ns.
        "tx_time": "ns3-truncated",
        "max_events": MAX_EVENTS,
        "topology": {"kind": "hpcc_file", "text": topo.text},
        "switch": switch,
        "nic": {k: x for k, x in nic.items() if x is not None},
        "cc": cc,
        "workload": {"flows": flows.scenario_flows()},
        "records": records,
    }
    if link_down is not None and stop_ns is not None:
        t_ns, a, b = link_down
        # Down for good: up again only after the run.
        links.append({"between": [a, b], "down": [[ps_text(t_ns * 1000), ps_text((max(stop_ns, t_ns) + 1) * 1000)]]})
        switch["reroute_after"] = "0s"
        notes.append(f"LINK_DOWN: link {a}-{b} goes down at {t_ns} ns for good and every switch's routes are "
                     f"recomputed at once, as third.cc's TakeDownLink does")
    if links:
        scenario["links"] = links
    if not flows:
        warnings.append("FLOW_FILE: no flows to run")
    return Conversion(config_path=cfg.path, scenario=scenario, warnings=warnings, notes=notes, outputs=outputs,
                      topology_path=topo_found[0], flow_path=flow_found[0], base_dir=base, topology=topo,
                      stop_time=None if stop is None else str(stop), made_flows=scenario["workload"]["flows"])


def _flow(f: dict) -> dict:
    out = {"src": f"h{f['src']}", "dst": f"h{f['dst']}", "size": f"{f['size']}B", "start": ps_text(f["start_ns"] * 1000)}
    if f["dport"] != 100:
        out["dport"] = f["dport"]
    return out


def _us(x: float | None) -> str | None:
    return None if x is None else us_text(x)


def _rate(bps: int | None) -> str | None:
    return None if bps is None else rate_text(bps)
