"""The ledger invariants (DESIGN invariants 1 and 2), judged on one snapshot (invariant 6).

A check that compares the confirmed donations with `donation_stats` and `user_data` must see all three as
of one moment: in PostgreSQL's default READ COMMITTED every statement sees what was committed when it
began, so a block confirmed between the SUM over the donations and the read of the campaign row is drift
that is not there -- and drift pauses the sale on every chain. `ledger_snapshot()` runs its body in one
REPEATABLE READ, read-only transaction: every statement in it sees the same committed state, and nothing
waits on the crediting writers (no lock is taken; they go on confirming meanwhile).

Inside a transaction the caller already opened, the caller's rules hold: the checkpoint
(crawlers/runs/checkpoint.py) takes the campaign lock first, which every crediting write takes too, so
nothing it reads moves under it. A test's own transaction (nothing runs beside it) is the same case.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import Count, Sum

from donations.models import Donation, DonationStats, DonationStatus, UserData


@contextmanager
def ledger_snapshot() -> Iterator[None]:
    """The body's reads on one snapshot (a context manager, or `@ledger_snapshot()` on a function that
    only reads)."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:  # must be the transaction's first statement
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


@ledger_snapshot()
def ledger_discrepancies(*, donors: Collection[str] | None = None) -> list[str]:
    """Invariants 1 and 2: the campaign and each donor's totals against the confirmed donations, on one
    snapshot; with `donors`, only theirs (a checkpoint's scope, crawlers/runs/checkpoint.py)."""
    problems = []
    confirmed = Donation.objects.filter(status=DonationStatus.CONFIRMED)
    sums = confirmed.aggregate(total=Sum("usd_amount"), tokens=Sum("tokens"))
    total, tokens = sums["total"] or Decimal("0"), sums["tokens"] or 0
    stats = DonationStats.objects.get()
    if (stats.total, stats.tokens) != (total, tokens):
        problems.append(
            f"campaign: donation_stats says {stats.total} USD / {stats.tokens} tokens, "
            f"the confirmed donations sum to {total} USD / {tokens} tokens"
        )
    stored_rows = UserData.objects.all()
    if donors is not None:
        confirmed, stored_rows = confirmed.filter(address__in=donors), stored_rows.filter(address__in=donors)
    per_address = {
        r["address"]: (r["total"], r["tokens"])
        for r in confirmed.values("address").annotate(total=Sum("usd_amount"), tokens=Sum("tokens"), n=Count("id"))
    }
    stored = {u.address: (u.total, u.tokens) for u in stored_rows}
    for address in sorted(set(per_address) | set(stored)):
        expected = per_address.get(address, (Decimal("0"), 0))
        have = stored.get(address)
        if have is None and address in per_address:
            problems.append(f"donor {address}: no user_data row, confirmed donations sum to {expected[0]} USD")
        elif have is not None and have != expected:
            problems.append(
                f"donor {address}: user_data says {have[0]} USD / {have[1]} tokens, "
                f"the confirmed donations sum to {expected[0]} USD / {expected[1]} tokens"
            )
    return problems
