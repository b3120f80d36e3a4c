"""What goes wrong around a sandbox run, as exceptions the callers can tell apart."""


class SandboxFailure(Exception):
    """The sandbox itself failed (could not start, died, broke protocol).

    Whether that was the infrastructure's fault or the solution's is decided
    by the engine, which reruns the request once in a fresh sandbox. A failed
    start may say why in a few words (`reason`, a metrics label: see
    evaluation/sandbox/starts.py).
    """

    def __init__(self, message: str, *, anomaly: str = "sandbox_failed", reason: str = "") -> None:
        super().__init__(message)
        self.anomaly = anomaly
        self.reason = reason


class PoolBusy(Exception):
    """Every sandbox slot is taken; the caller should retry later."""


class SandboxUnavailable(Exception):
    """The sandbox could not run an execution (busy pool, backend down): retry later."""
