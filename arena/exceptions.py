"""Domain errors of the arena."""


class TradeRejected(Exception):
    """An order that cannot execute; the message is the reason recorded on the trade."""


class DecisionNotRetryable(Exception):
    """The decision is final or held by a running claim."""
