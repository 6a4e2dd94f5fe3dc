"""What one run of a crawler did, for its log line, the metrics and the command's output."""

from __future__ import annotations

from dataclasses import dataclass, field

from crawlers.record.blocks import BlockTally


def run_title(label: str, chain: str) -> str:
    """How a crawler job is named in its log lines and output: "finalized on base"."""
    return f"{label} on {chain}"


@dataclass
class CrawlResult(BlockTally):
    label: str
    chain: str = field(kw_only=True)
    cursor_before: int | None = None
    tip: int | None = None  # head (latest) or finalized block the run aimed for
    held: str | None = None  # why the run stopped short of the tip
    # The run holds only because the check provider (DWS_RPC_CHECK_URL) gave no evidence: it is waited for.
    waiting_for_check: bool = False

    @property
    def more_to_do(self) -> bool:
        """The run stopped at its per-run cap, not at a hold, with blocks before its tip still to do."""
        return (
            self.held is None
            and self.blocks > 0
            and self.cursor is not None
            and self.tip is not None
            and self.cursor < self.tip
        )

    def summary(self) -> str:
        text = (
            f"crawl {run_title(self.label, self.chain)}: "
            f"cursor {self.cursor_before} -> {self.cursor} (tip {self.tip}), "
            f"{self.blocks} block(s), {self.inserted} inserted, {self.confirmed} confirmed, {self.failed} failed"
        )
        return text + (f"; held: {self.held}" if self.held else "")
