"""What a provider said: an `Answer`, or a `NoEvidence` that can never be read as "does not exist".

`require()` turns a `NoEvidence` into `NoEvidenceError`, which every crawler treats as "hold the
cursor and retry"; a provider's null, error object, 429 or time-out never fails or skips a donation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Answer:
    """A definite, non-null result from the provider."""

    value: Any


@dataclass(frozen=True)
class NoEvidence:
    """The provider told us nothing usable. Never a reason to fail or skip a donation."""

    method: str
    # "null" | "error" | "rate-limited" | "backoff" | "timeout" | "connection" | "http" | "malformed" |
    # "too-large" (an answer past DWS_RPC_MAX_ANSWER_MB)
    # (and, from the block store and the scan, "cache-write" | "reorged")
    kind: str
    detail: str

    def describe(self) -> str:
        return f"{self.method}: {self.kind} ({self.detail})"


RpcOutcome = Answer | NoEvidence
TOO_LARGE = "too-large"  # the kind of an answer past DWS_RPC_MAX_ANSWER_MB (crawlers/chain/transport.py)


def too_large(outcome: RpcOutcome) -> bool:
    """An answer refused for its size alone: asking for less may be answered (the client halves a batch;
    a block's trace is asked per transaction, crawlers/scan/traces.py)."""
    return isinstance(outcome, NoEvidence) and outcome.kind == TOO_LARGE


Call = tuple[str, Any]  # (method, params): one JSON-RPC request, before it is numbered


class NoEvidenceError(Exception):
    """Raised by `require()`: the caller must hold its position and retry later."""

    def __init__(self, outcome: NoEvidence) -> None:
        self.outcome = outcome
        super().__init__(outcome.describe())


def require(outcome: RpcOutcome) -> Any:
    if isinstance(outcome, NoEvidence):
        raise NoEvidenceError(outcome)
    return outcome.value


def outcome_label(outcome: RpcOutcome) -> str:
    """The outcome's name for the metrics: "answer", or the kind of no evidence."""
    return outcome.kind if isinstance(outcome, NoEvidence) else "answer"
