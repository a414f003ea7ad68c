"""The one exception family the runtime checks raise for bad input."""

from __future__ import annotations

from typing import Any


class FingerprintError(Exception):
    """Bad input to capture, compare, load or transfer: the message says what and how to fix it."""


class NonFiniteLossError(FingerprintError):
    """A recorded loss is NaN or infinite: a broken run, not a tolerance question.

    `fingerprint` holds what was recorded before the loss went bad (when there is one),
    so it can still be saved and inspected.
    """

    def __init__(self, message: str, fingerprint: Any = None) -> None:
        super().__init__(message)
        self.fingerprint = fingerprint
