"""DESIGN.md invariants 1 and 2 as a reusable check (crawler, reconcile and chaos tests call it).

1. donation_stats.total/tokens = the sums of usd_amount/tokens over the confirmed donations.
2. user_data.total/tokens of an address = the sums over its confirmed donations (and no user_data row
   claims money for an address without confirmed donations).
"""

from __future__ import annotations

from donations.ledger import ledger_discrepancies


def ledger_drift() -> list[str]:
    """Every way the stored totals differ from the confirmed donations (invariants 1 and 2); empty when
    consistent. The same check `reconcile` runs, so tests and operators judge the ledger alike."""
    return ledger_discrepancies()


def assert_ledger_invariants() -> None:
    problems = ledger_drift()
    assert not problems, "ledger invariants broken:\n" + "\n".join(problems)
