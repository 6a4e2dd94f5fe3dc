"""DESIGN.md invariants 1 and 2 as a reusable check (crawler, reconcile and chaos tests call it).

1. donation_stats.total/tokens = the sums of usd_amount/tokens over the confirmed donations.
2. user_data.total/tokens of an address = the sums over its confirmed donations (and no user_data row
   claims money for an address without confirmed donations).
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Count, Sum

from donations.models import Donation, DonationStats, DonationStatus, UserData


def ledger_drift() -> list[str]:
    """Every way the stored totals differ from the confirmed donations; empty when consistent."""
    problems = []
    confirmed = Donation.objects.filter(status=DonationStatus.CONFIRMED)
    sums = confirmed.aggregate(total=Sum("usd_amount"), tokens=Sum("tokens"))
    total, tokens = sums["total"] or Decimal("0"), sums["tokens"] or 0
    stats = DonationStats.objects.get()
    if (stats.total, stats.tokens) != (total, tokens):
        problems.append(f"donation_stats {stats.total} USD/{stats.tokens} tokens != confirmed {total}/{tokens}")
    per_address = {
        row["address"]: (row["total"], row["tokens"])
        for row in confirmed.values("address").annotate(total=Sum("usd_amount"), tokens=Sum("tokens"), n=Count("id"))
    }
    users = {u.address: (u.total, u.tokens) for u in UserData.objects.all()}
    for address, expected in per_address.items():
        if users.get(address) != expected:
            problems.append(f"user_data {address}: {users.get(address)} != confirmed {expected}")
    for address, stored in users.items():
        if address not in per_address and stored != (Decimal("0"), 0):
            problems.append(f"user_data {address}: {stored} but no confirmed donation")
    return problems


def assert_ledger_invariants() -> None:
    problems = ledger_drift()
    assert not problems, "ledger invariants broken:\n" + "\n".join(problems)
