"""Domain errors of the arena."""


class TradeRejected(Exception):
    """An order that cannot execute; the message is the reason recorded on the trade."""


class DecisionNotRetryable(Exception):
    """The decision is final or held by a running claim."""


class ClaimLost(Exception):
    """The decision is no longer held by this executor's claim (a slow worker whose claim
    was taken over): it must write nothing more for it."""


class OutsideRefused(Exception):
    """An outside agent's API request refused: `status` (a 4xx), a snake_case `code` and the
    message sent back. The refusal is recorded (arena/services/outside.py)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
