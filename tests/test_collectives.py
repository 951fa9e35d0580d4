"""Collectives as flows with dependencies (`workload.collective`): a ring
all-reduce takes the textbook time, its steps wait for their data, a slow
rank holds up the others, and bad entries are refused naming the key."""

import pytest

import rdmalab

RATE = 100e9
MTU = 4096
# On the wire: a data frame is the payload, 62 B of headers and 20 B of
# preamble and gap; every data packet is ACKed (nic.ack_every_packets 1) by
# a 66 B frame, and in a ring each host's uplink carries its data to the
# next rank and its ACKs to the one before, so both count against B.
DATA_FRAME = MTU + 62 + 20
ACK_FRAME = 66 + 20
GOODPUT = RATE * MTU / (DATA_FRAME + ACK_FRAME)


def job(n: int = 8, **entry) -> dict:
    c = {"name": "job", "op": "all-reduce", "hosts": [f"h{i}" for i in range(n)], "bytes": "16MB"}
    c.update(entry)
    return {
        "name": "collective",
        "seed": 1,
        "duration": "100ms",
        "topology": {"kind": "single_switch", "hosts": n, "host_link": {"rate": "100Gbps", "delay": "1us"}},
        "switch": {"buffer": "32MiB", "pfc": {"enabled": True}},
        "nic": {"mtu": f"{MTU}B"},
        "cc": {"algorithm": "dcqcn"},
        "workload": {"collective": [c]},
        "records": {"sample_interval": "off"},
    }


def rows(result, table: str) -> list[dict]:
    return result.table(table).to_dicts()


def textbook(op_steps: float, n: int, size: float) -> float:
    """Seconds: steps × size/n at the goodput B (2(n−1)/n · S/B for an all-reduce)."""
    return op_steps * size / n * 8 / GOODPUT


def test_a_pipelined_ring_all_reduce_takes_the_textbook_time_and_reports_nccl_tests_busbw():
    n, size = 8, 16e6
    r = rdmalab.run(job(n, chunk="128KiB"))
    (row,) = rows(r, "collectives")
    assert row["flows_arrived"] == row["flows"] and row["ranks"] == n
    t = row["time_ps"] / 1e12
    bound = textbook(2 * (n - 1), n, size)
    # Chunks pipeline through the ring: only one chunk's latency above the bound.
    assert bound <= t <= 1.02 * bound, (t, bound)
    assert row["algbw_bps"] == pytest.approx(size * 8 / t, rel=1e-6)
    assert row["busbw_bps"] == pytest.approx(row["algbw_bps"] * 2 * (n - 1) / n, rel=1e-6)
    # Every byte each rank sent (2(n−1) blocks of S/n) arrived, none twice.
    flows = r.table("flows")
    assert flows["size_bytes"].sum() == 2 * (n - 1) * size
    assert flows.height == row["flows"]


def test_without_chunks_each_step_waits_for_its_whole_block_to_arrive():
    """Store and forward per step: 2(n−1) block times plus a per-step
    latency of at least the two 1 µs links. Without the wait for arrival the
    steps would overlap and the run would take about the bound alone."""
    n, size = 8, 16e6
    (row,) = rows(rdmalab.run(job(n)), "collectives")
    t = row["time_ps"] / 1e12
    bound = textbook(2 * (n - 1), n, size)
    steps = 2 * (n - 1)
    assert t >= bound + steps * 2e-6, (t, bound)
    assert t <= 1.02 * bound + steps * 10e-6, (t, bound)


@pytest.mark.parametrize("op,steps", [("reduce-scatter", 7), ("all-gather", 7)])
def test_reduce_scatter_and_all_gather_take_n_minus_1_steps(op, steps):
    n, size = 8, 16e6
    (row,) = rows(rdmalab.run(job(n, op=op, chunk="128KiB")), "collectives")
    bound = textbook(steps, n, size)
    assert bound <= row["time_ps"] / 1e12 <= 1.02 * bound
    assert row["busbw_bps"] == pytest.approx(row["algbw_bps"] * (n - 1) / n, rel=1e-6)


def test_a_straggler_delays_every_rank_of_the_ring():
    """One rank computes 1 ms longer: every rank's collective ends about
    1 ms later, since each waits for data that passes through the slow one,
    and every rank's next iteration starts that much later. (Steps of whole
    blocks, so the ring moves in lockstep; with chunks the ranks just before
    the slow one get some of the time back, as in a real pipeline.)"""
    n, extra = 8, 1e-3
    base = job(n, iterations=2, compute="300us")
    slow = job(n, iterations=2, compute=["300us"] * 3 + ["1300us"] + ["300us"] * 4)
    a = {(x["iteration"], x["rank"]): x for x in rows(rdmalab.run(base), "collective_ranks")}
    b = {(x["iteration"], x["rank"]): x for x in rows(rdmalab.run(slow), "collective_ranks")}
    for rank in range(n):
        shift = (b[0, rank]["done_ps"] - a[0, rank]["done_ps"]) / 1e12
        assert shift == pytest.approx(extra, rel=0.03), (rank, shift)
        if rank != 3:
            launch = (b[1, rank]["launched_ps"] - a[1, rank]["launched_ps"]) / 1e12
            assert launch == pytest.approx(extra, rel=0.03), (rank, launch)
    assert b[0, 3]["compute_ps"] == 1_300_000_000
    # Iteration 1's compute starts when iteration 0's data is in: launched = done + compute.
    assert all(b[1, r]["launched_ps"] == b[0, r]["done_ps"] + b[1, r]["compute_ps"] for r in range(n))
    assert {b[1, r]["compute_ps"] for r in range(n) if r != 3} == {300_000_000}


def test_compute_jitter_is_drawn_from_the_seed():
    sc = job(4, compute="100us", jitter=0.5, iterations=3)
    first = rows(rdmalab.run(sc), "collective_ranks")
    again = rows(rdmalab.run(sc), "collective_ranks")
    assert first == again
    computes = {x["compute_ps"] for x in first}
    assert len(computes) > 6 and all(50_000_000 <= c <= 150_000_000 for c in computes)
    sc["seed"] = 2
    assert rows(rdmalab.run(sc), "collective_ranks") != first


def test_connections_are_kept_from_step_to_step():
    """NCCL keeps one QP per peer and channel: a 4-rank ring with 2 channels
    over 3 iterations opens 8 QPs, not one per step."""
    r = rdmalab.run(job(4, channels=2, iterations=3, chunk="256KiB"))
    flows = r.table("flows")
    assert flows["qp"].n_unique() == 8
    assert flows.height == 3 * 2 * 6 * 4 * 8  # iterations × channels × steps × ranks × rounds


@pytest.mark.parametrize(
    "entry,key,says",
    [
        ({"hosts": ["h0"]}, "workload.collective[0].hosts", "at least two hosts"),
        ({"hosts": ["h0", "h0"]}, "workload.collective[0].hosts[1]", "appears twice"),
        ({"op": "broadcast"}, "workload.collective[0].op", "all-reduce"),
        ({"bytes": "3B"}, "workload.collective[0].bytes", "at least 4 bytes (ranks × channels)"),
        ({"chunk": "1B", "bytes": "4000B", "hosts": ["h0", "h1", "h2"]}, "workload.collective[0].chunk", "without data"),
        ({"compute": ["1us", "2us"]}, "workload.collective[0].compute", "one duration per rank"),
        ({"compute": ["1us", "2us", "3us", "x"]}, "workload.collective[0].compute[3]", ""),
        ({"channels": 0}, "workload.collective[0].channels", "1 to 64"),
        ({"verb": "read"}, "workload.collective[0].verb", "write"),
        ({"iterations": 0}, "workload.collective[0].iterations", ""),
        ({"jitter": 2}, "workload.collective[0].jitter", ""),
        ({"colour": "red"}, "workload.collective[0].colour", ""),
    ],
)
def test_bad_entries_are_refused_naming_the_key(entry, key, says):
    sc = job(4, **entry)
    with pytest.raises(rdmalab.ScenarioError) as e:
        rdmalab.validate(sc)
    text = str(e.value)
    assert key in text and says in text, text


def test_parallel_runs_refuse_collectives_with_the_reason():
    with pytest.raises(Exception, match="workload.collective"):
        rdmalab.run(job(4), threads=2)


def test_all_to_all_on_a_fat_tree_loses_to_ecmp_collisions():
    """The same 16-rank all-to-all on one switch runs near the goodput; on a
    k = 4 fat tree with 100 Gb/s links (not oversubscribed) per-flow ECMP
    hashing puts several flows on one uplink and the job slows, as the
    literature on MoE traffic reports."""
    def a2a(topology: dict) -> dict:
        sc = job(16, op="all-to-all", bytes="32MB")
        sc["topology"] = topology
        (row,) = rows(rdmalab.run(sc), "collectives")
        return row

    link = {"rate": "100Gbps", "delay": "1us"}
    star = a2a({"kind": "single_switch", "hosts": 16, "host_link": link})
    tree = a2a({"kind": "fat_tree", "k": 4, "host_link": link, "fabric_link": link})
    assert star["busbw_bps"] > 0.97 * GOODPUT
    assert tree["busbw_bps"] < 0.8 * star["busbw_bps"]
    # The all-to-all sends (n−1)/n of every rank's buffer: its busbw is the per-link rate.
    assert star["busbw_bps"] == pytest.approx(star["algbw_bps"] * 15 / 16, rel=1e-6)


def test_hosts_all_takes_every_host_in_node_order():
    r = rdmalab.run(job(4, hosts="all", bytes="400KB"))
    ranks = rows(r, "collective_ranks")
    assert [x["host_name"] for x in ranks] == ["h0", "h1", "h2", "h3"]
    with pytest.raises(rdmalab.ScenarioError, match="workload.collective.0..hosts"):
        rdmalab.validate(job(4, hosts="some"))


def pipeline(p: int = 4, m: int = 8, **entry) -> dict:
    e = {"op": "pipeline", "bytes": "64KB", "microbatches": m, "compute": "100us", "backward": "200us"}
    e.update(entry)
    return job(p, **e)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_a_pipeline_takes_the_bubble_formula_plus_its_transfers(schedule):
    """p stages, m microbatches, forward f and backward b on every stage:
    both schedules flush in (m + p − 1)(f + b) of compute (Narayanan et al.,
    SC'21 §2.2). With 1 KB between stages each crossing costs a few µs;
    GPipe's critical path crosses 2(p − 1) times, 1F1B's more often (it
    alternates directions: 16 crossings measured here), so 64 KB
    activations cost 1F1B more than GPipe."""
    p, m, f, b = 4, 8, 100e-6, 200e-6
    bound = (m + p - 1) * (f + b)
    small = rows(rdmalab.run(pipeline(p, m, schedule=schedule, bytes="1KB")), "collectives")[0]
    assert bound <= small["time_ps"] / 1e12 <= bound + 40e-6, small
    r = rdmalab.run(pipeline(p, m, schedule=schedule))
    (row,) = rows(r, "collectives")
    t = row["time_ps"] / 1e12
    crossings = 2 * (p - 1) if schedule == "gpipe" else 2 * (p - 1) + 2 * m
    assert bound + 2 * (p - 1) * 5e-6 <= t <= bound + crossings * 10e-6, (t, bound)
    assert row["busbw_bps"] is None and row["flows"] == 2 * (p - 1) * m
    # Each stage computes m(f + b); the rest of its span is the bubble.
    assert {x["compute_ps"] for x in rows(r, "collective_ranks")} == {round(m * (f + b) * 1e12)}


def test_a_slow_link_between_stages_stretches_the_pipeline():
    """Activations of 4 MB cross a 100 Gb/s link in about 0.35 ms, longer
    than a forward pass: the transfers, not the compute, set the pace."""
    p, m = 4, 8
    (fast,) = rows(rdmalab.run(pipeline(p, m)), "collectives")
    (slow,) = rows(rdmalab.run(pipeline(p, m, bytes="4MB")), "collectives")
    assert slow["time_ps"] > fast["time_ps"] + m * 0.3e9


def test_pipeline_keys_are_refused_with_ring_ops_and_chunks_with_pipelines():
    with pytest.raises(rdmalab.ScenarioError, match=r"microbatches.*only applies with .*op: pipeline"):
        rdmalab.validate(job(4, microbatches=4))
    with pytest.raises(rdmalab.ScenarioError, match=r"chunk.*only applies with"):
        rdmalab.validate(pipeline(4, chunk="64KB"))
    with pytest.raises(rdmalab.ScenarioError, match=r"backward\[1\]"):
        rdmalab.validate(pipeline(4, backward=["1us", "x", "1us", "1us"]))


def test_groups_run_the_same_collective_side_by_side():
    """Two tensor-parallel groups of 4 on one switch: each all-reduce takes
    its own 4-rank textbook time, as if alone (the switch is non-blocking)."""
    groups = [[f"h{i}" for i in range(4)], [f"h{i}" for i in range(4, 8)]]
    sc = job(8, hosts=groups, chunk="128KiB")
    got = {x["collective"]: x for x in rows(rdmalab.run(sc), "collectives")}
    assert sorted(got) == ["job/0", "job/1"]
    bound = textbook(2 * 3, 4, 16e6)
    for row in got.values():
        assert row["ranks"] == 4 and bound <= row["time_ps"] / 1e12 <= 1.02 * bound
    ranks = rows(rdmalab.run(sc), "collective_ranks")
    assert [x["host_name"] for x in ranks if x["collective"] == "job/1"] == groups[1]
    with pytest.raises(rdmalab.ScenarioError, match=r"hosts\[1\]\[0\].*one group"):
        rdmalab.validate(job(8, hosts=[["h0", "h1"], ["h0", "h2"]]))
    with pytest.raises(rdmalab.ScenarioError, match="groups of 2, 3"):
        rdmalab.validate(job(8, hosts=[["h0", "h1"], ["h2", "h3", "h4"]]))


def test_the_double_binary_tree_wins_on_small_buffers_and_loses_bandwidth_on_large_ones():
    """NCCL picks the tree for small buffers: O(log n) steps of latency
    against the ring's 2(n − 1). Large ones: each rank sends 2S either way,
    but interior ranks take their two children's sums and their parent's
    result at once (a 3:1 incast), so the tree gets less of the link."""
    for n in (8, 16):
        small = {a: rows(rdmalab.run(job(n, algorithm=a, bytes="8KB")), "collectives")[0]["time_ps"]
                 for a in ("ring", "tree")}
        assert small["tree"] < 0.7 * small["ring"], (n, small)
    n, size = 8, 16e6
    big = {a: rows(rdmalab.run(job(n, algorithm=a, chunk="128KiB")), "collectives")[0] for a in ("ring", "tree")}
    bound = 2 * size * 8 / GOODPUT  # every rank sends 2S in either
    assert bound <= big["tree"]["time_ps"] / 1e12 <= 1.2 * bound
    assert big["tree"]["busbw_bps"] < 0.9 * big["ring"]["busbw_bps"]
    # busbw is nccl-tests' all-reduce factor whatever the algorithm.
    assert big["tree"]["busbw_bps"] == pytest.approx(big["tree"]["algbw_bps"] * 2 * (n - 1) / n, rel=1e-6)


def test_every_rank_of_a_tree_all_reduce_waits_for_the_slowest():
    """Each rank's result holds every rank's data: with one rank computing
    1 ms longer, no rank finishes before that rank has launched, and all
    finish soon after (a 64 KB buffer moves in tens of µs). With large
    buffers the delay is partly hidden (the other ranks' transfers run in
    the meantime): 0.7 ms of 1 ms with 128 KiB chunks, none without."""
    n = 8
    for chunk in ({}, {"chunk": "8KiB"}):
        slow = job(n, algorithm="tree", bytes="64KB", compute=["300us"] * 5 + ["1300us"] + ["300us"] * 2, **chunk)
        ranks = {x["rank"]: x for x in rows(rdmalab.run(slow), "collective_ranks")}
        late = ranks[5]["launched_ps"]
        assert late == 1_300_000_000
        for r in range(n):
            assert late < ranks[r]["done_ps"] < late + 100_000_000, (chunk, r)


def test_a_tree_is_only_for_all_reduce():
    with pytest.raises(rdmalab.ScenarioError, match=r"algorithm.*only applies with `workload.collective\[0\].op: all-reduce`"):
        rdmalab.validate(job(4, op="all-gather", algorithm="tree"))


def test_rings_along_rails_stay_on_their_leaf_and_a_ring_across_rails_crosses_the_spine():
    """A rail-optimised fabric (8 servers × 4 NICs, one leaf per rail, one
    100 Gb/s uplink per leaf to one spine): data-parallel rings over the
    same rail of every server run at line rate; one ring over every NIC in
    server order crosses rails at 3 of every 4 hops, through uplinks each
    shared by the leaf's 8 hosts."""
    link = {"rate": "100Gbps", "delay": "1us"}
    topo = {"kind": "rail_optimized", "servers": 8, "rails": 4, "spines": 1, "host_link": link, "fabric_link": link}
    rails = [[f"h{s * 4 + r}" for s in range(8)] for r in range(4)]
    along = job(32, hosts=rails, bytes="4MB", chunk="64KiB")
    across = job(32, hosts="all", bytes="4MB", chunk="64KiB")
    for sc in (along, across):
        sc["topology"] = topo
    a = rows(rdmalab.run(along), "collectives")
    assert len(a) == 4 and all(x["busbw_bps"] > 0.95 * GOODPUT for x in a)
    (b,) = rows(rdmalab.run(across), "collectives")
    assert b["busbw_bps"] < 0.3 * min(x["busbw_bps"] for x in a)
    with pytest.raises(rdmalab.ScenarioError, match="topology.rails"):
        rdmalab.validate({**along, "topology": {**topo, "rails": 0}})


def test_entries_take_turns_with_after_pipeline_then_data_parallel_all_reduce():
    """Two pipeline replicas of 2 stages ([h0, h1] and [h2, h3]) and a
    data-parallel all-reduce per stage ([h0, h2] and [h1, h3]) `after` the
    pipeline: on every host, iteration i's all-reduce starts when its
    pipeline iteration i is done there, and pipeline iteration i+1 when the
    all-reduce is."""
    sc = job(4, hosts=[["h0", "h1"], ["h2", "h3"]], op="pipeline", microbatches=4, bytes="1MB",
             compute="50us", iterations=2)
    sc["workload"]["collective"][0]["name"] = "pipe"
    sc["workload"]["collective"].append({"name": "dp", "op": "all-reduce", "hosts": [["h0", "h2"], ["h1", "h3"]],
                                         "bytes": "8MB", "iterations": 2, "after": "pipe"})
    ranks = rows(rdmalab.run(sc), "collective_ranks")
    at = {(x["collective"].split("/")[0], x["iteration"], x["host_name"]): x for x in ranks}
    for h in ("h0", "h1", "h2", "h3"):
        for i in range(2):
            assert at["dp", i, h]["launched_ps"] >= at["pipe", i, h]["done_ps"], (h, i)
        assert at["pipe", 1, h]["launched_ps"] >= at["dp", 0, h]["done_ps"], h
    # Without `after` the all-reduce runs beside the pipeline from the start.
    del sc["workload"]["collective"][1]["after"]
    free = {(x["collective"].split("/")[0], x["iteration"], x["host_name"]): x for x in rows(rdmalab.run(sc), "collective_ranks")}
    assert free["dp", 0, "h0"]["launched_ps"] < free["pipe", 0, "h0"]["done_ps"]


def test_after_must_name_another_entry_and_not_close_a_circle():
    sc = job(4, after="nobody")
    with pytest.raises(rdmalab.ScenarioError, match=r"after: `nobody` — must name another entry"):
        rdmalab.validate(sc)
    sc = job(4, name="a", after="b")
    sc["workload"]["collective"].append({"name": "b", "op": "all-gather", "hosts": ["h0", "h1"], "bytes": "1MB", "after": "a"})
    with pytest.raises(rdmalab.ScenarioError, match="circle"):
        rdmalab.validate(sc)
    sc = job(4, name="a", after="b", iterations=2)
    sc["workload"]["collective"].append({"name": "b", "op": "all-gather", "hosts": ["h0", "h1"], "bytes": "1MB"})
    with pytest.raises(rdmalab.ScenarioError, match="has 1 iterations and this entry 2"):
        rdmalab.validate(sc)


def test_no_table_has_a_column_named_like_a_scenario_section():
    """A sweep axis over a whole section (`host`, `nic`, `cc`, ...) is named
    by the section; a table column of that name would rename the axis's
    column to `param:host` in every table and break the figures that look
    for `host` (the SwiftRDMA cache figure did, when collective_ranks had
    a `host` column)."""
    from rdmalab.outputs import COLUMNS

    sections = {"host", "nic", "cc", "switch", "switches", "links", "topology", "records", "control", "workload",
                "duration", "seed"}
    for table, cols in COLUMNS.items():
        assert not sections & {c for c, _ in cols}, table
