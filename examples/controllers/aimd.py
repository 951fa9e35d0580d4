"""An AIMD controller written in Python: halve the rate on a CNP, add
`step_gbps` every `per_bytes` acknowledged bytes. A starting point for your own."""

from rdmalab import Controller


class HalveOnCnp(Controller):
    subscriptions = ["ACK", "CNP"]

    def __init__(self, step_gbps: float = 1.0, per_bytes: int = 65536, min_gbps: float = 1.0):
        self.step = int(step_gbps * 1e9)
        self.per_bytes = per_bytes
        self.min = int(min_gbps * 1e9)
        self.acked = 0

    def on_event(self, event, ctx):
        if event.kind == "CNP":
            ctx.set_rate(max(self.min, ctx.rate_bps // 2))
        elif event.kind == "ACK":
            self.acked += event.acked_bytes
            if self.acked >= self.per_bytes:
                self.acked = 0
                ctx.set_rate(min(ctx.line_rate_bps, ctx.rate_bps + self.step))
