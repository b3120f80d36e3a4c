class SandboxFailure(Exception):
    """The sandbox itself failed (could not start, died, broke protocol).

    Whether that was the infrastructure's fault or the solution's is decided
    by the engine, which reruns the request once in a fresh sandbox.
    """

    def __init__(self, message: str, *, anomaly: str = "sandbox_failed") -> None:
        super().__init__(message)
        self.anomaly = anomaly


class PoolBusy(Exception):
    """Every sandbox slot is taken; the caller should retry later."""
