"""DCQCN as SwCC's Soft-RoCE baseline runs it (github.com/RC4ML/SwCC,
Baseline/rxe/cc_algo/dcqcn.h and rxe_qp.c), re-expressed as an rdmalab
controller. It differs from the DCQCN of the paper it cites in where its
steps run, not in its constants:

* every step runs when an ACK arrives (rxe's completer): the 55 us
  increase timer is checked then, so a QP with few ACKs recovers slowly;
* the receiver echoes a mark on the ACK at most once per 50 us per QP, and
  the sender cuts by alpha/2 on that ACK;
* rates start at 1250 MB/s (10 Gb/s) with alpha 1, floor at 10 MB/s; five
  fast-recovery steps halve the gap to the target, then the target grows by
  5 MB/s per step (no hyper increase);
* alpha only decays (x (1 - 1/256) per step and per cut): the code adds g in
  the wrong scale on a cut, which makes that increase about zero;
* the 10 MiB byte counter never fires on 4 MB flows and is left out.

Run it with `nic.ack_every: 1` (rxe acknowledges every 2 KB message, each
one packet) and ECN marking at the switch.
"""

from rdmalab import Controller

MB_PER_S = 8e6  # rxe keeps rates in MB/s
PS_PER_US = 1_000_000


class RxeDcqcn(Controller):
    """SwCC's Soft-RoCE DCQCN: rate steps driven by ACK arrivals."""

    subscriptions = ["ACK"]

    def __init__(self, g: float = 1 / 256, cnp_echo_us: float = 50, timer_us: float = 55):
        self.g = g
        self.echo_ps = cnp_echo_us * PS_PER_US
        self.timer_ps = timer_us * PS_PER_US
        self.rate = self.target = 1250 * MB_PER_S
        self.alpha = 1.0
        self.last_step = 0
        self.last_echo = None
        self.steps = 0

    def on_event(self, ev, ctx):
        now = ctx.now_ps
        if ev.ece and (self.last_echo is None or now - self.last_echo >= self.echo_ps):
            self.last_echo = now
            self.target = self.rate
            self.rate = max(self.target * (1 - self.alpha / 2), 10 * MB_PER_S)
            self.alpha *= 1 - self.g
            self.last_step = now
            self.steps = 0
        if now - self.last_step >= self.timer_ps:
            self.alpha *= 1 - self.g
            self.last_step = now
            self.steps += 1
            if self.steps >= 5:
                self.target += 5 * MB_PER_S
            self.rate = max((self.target + self.rate) / 2, 10 * MB_PER_S)
        ctx.set_rate(min(self.rate, ctx.line_rate_bps))
