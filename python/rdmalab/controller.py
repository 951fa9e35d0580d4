"""Writing a congestion controller in Python.

Subclass :class:`Controller` and point a scenario at it::

    cc:
      algorithm: python
      class: my_cc.py:HalveOnCnp     # a file next to the scenario, or module:Class
      params: {step_gbps: 1}         # keyword arguments of the constructor

rdmalab makes one instance per QP and calls ``on_event(event, ctx)`` for every
event the class subscribes to (``subscriptions``; timers always arrive).

The event has ``kind`` — ``TX``, ``ACK``, ``NACK``, ``CNP``, ``TIMER``,
``TIMEOUT``, ``RTT``, ``RX``, ``PEER`` or ``HINT`` — and the fields of that
kind: ``bytes``, ``packets`` (TX); ``acked_bytes``, ``acked_through``,
``rtt_ps``, ``ece``, ``hops`` (ACK); ``expected_psn`` (NACK); ``slot``
(TIMER); ``udp_sport``, ``sent_ps``, ``rtt_ps``, ``lost`` (RTT: an
out-of-band probe sent at ``sent_ps`` answered, or lost after
``nic.probe_timeout``); ``bytes``, ``packets``, ``ce``
(RX: data arrived at the receiver — only where receive events exist:
``swcc`` and ``host-cpu``, or ``control.rx_events: true``); ``words``, ``to_receiver`` (PEER: an
out-of-band message from the QP's other end); ``hint``, ``value`` (HINT: an
application hint, from ``hints:`` in the scenario; the core's low-level
``rdmalab._core.Simulation.hint`` sends more during a run, not yet a public API).
``HOST`` events are periodic host-domain reports (``host.report_interval``):
``pcie_utilization``, ``pcie_latency_ps``, ``active_qps``, ``port_utilization``.
Subscribing to ``PEER`` or to ``HINT`` gets both PEER and HINT events (one mask bit).

The context has ``now_ps``, ``line_rate_bps``, ``rate_bps``,
``bytes_in_flight``, ``snd_nxt_bytes``, ``base_rtt_ps``, ``path_hops``,
``mtu``, ``coalesced``, ``int_hops``, the QP's id ``qp``, its ``tenant`` (a
number the QPs of one tenant share, or None) and the counters of
the NIC where the event happened (``nic_node``, ``nic_active_qps``,
``nic_tx_bytes``, ``nic_rx_bytes``, ``nic_rx_payload``: cumulative, so a
controller turns them into rates with ``now_ps``), and records actions:
``set_rate(bps)`` (an int or a float, rounded to whole bit/s),
``set_window(bytes or None)``, ``set_timer(slot, at_ps)`` (slots 0–3),
``cancel_timer(slot)``, ``request_probe(udp_sport)`` (an RTT probe along the
path that source port hashes to), ``set_path(udp_sport)`` and
``set_share(packets)`` (the QP's packets per turn in the NIC's round-robin
QP scheduler: a tenant's share), ``set_class(c)`` (move the QP's data to
traffic class 1–7), ``set_cc_header_word(i, value)`` (word i, 0–15, of the
QP's extensible CC header: with ``control.cc_header`` its data packets carry
it and their ACKs echo it back, read as ``ctx.cc_header``, a list of words),
``send_oob([w0, w1, w2, w3])`` (four 32-bit
words to the other end of the QP;
``ctx.at_receiver`` says which end this event happened at: one controller
object serves both ends, so pass state between them only this way). Actions are
checked (a rate must be 1 bit/s to the line rate, a timer now or later); the
callbacks return None. An exception, a bad action or a returned value stops the
run with an error that names the controller and the event.

Python controllers go through exactly the same interface and placements as the
Rust ones, but each call crosses into Python: expect roughly 1–2 µs per event,
tens of times slower than a built-in. Use them to prototype, then port to Rust
as a built-in algorithm (``crates/rdmalab-core/src/algo/``, registered in two
files): docs/controllers.md shows the steps and tabulates all of the above.
"""

from __future__ import annotations


class Controller:
    """Base class: every callback is a no-op. Override what you need."""

    #: Events to receive; leave out what you do not use, it saves time.
    subscriptions = ["TX", "ACK", "NACK", "CNP", "TIMEOUT", "RTT"]

    def on_start(self, ctx) -> None:
        """The QP starts; ``ctx.rate_bps`` is the line rate."""

    def on_event(self, event, ctx) -> None:
        """React to ``event``; record actions on ``ctx``."""
