"""The donation address's mode per chain (`address_mode`): written by whoever read the address's code there
(a crawler run, a worker's start), read back by crawlers/runs/address_code.py for every decision."""

from __future__ import annotations

from django.utils import timezone

from crawlers.models import AddressMode


def address_mode_record(*, chain: str, address: str, mode: str) -> None:
    """Note that `address` has `mode` on `chain` now (one row per chain, the newest reading)."""
    AddressMode.objects.update_or_create(
        chain=chain, defaults={"address": address.lower(), "mode": mode, "read_at": timezone.now()}
    )


def address_modes() -> dict[str, tuple[str, str]]:
    """Chain -> (address, mode), for every chain whose address's code was ever read."""
    return {row.chain: (row.address, row.mode) for row in AddressMode.objects.all()}
