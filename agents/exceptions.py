"""Domain errors of the agents app."""


class DecisionParseError(ValueError):
    """A model's response is not a valid decision.

    The message says, in words a model can act on, what is wrong: it is sent back to the
    model in the retry prompt and stored with the decision.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
