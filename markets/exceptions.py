"""Domain errors of the market catalogue."""


class OddRecord(ValueError):
    """A Gamma record that does not fit our model; the message says why."""


class GammaUnavailable(RuntimeError):
    """The Gamma API could not be read (after retries); the message says why."""
