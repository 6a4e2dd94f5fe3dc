"""How far each chain's crawlers' ranges are proven complete (`completeness`), for /health: written from
what the balance proof returned (crawlers/scan/proof.py), never by the proof itself."""

from __future__ import annotations

import logging

from crawlers.models import Completeness

logger = logging.getLogger("dws.crawlers")

_warned_unproven: set[tuple[str, str]] = set()  # (chain, label) already warned about in this process


def completeness_proven(*, chain: str, label: str, through: int) -> None:
    """Blocks up to `through` are proven complete: the crawler's high-water mark (never lowered, so a
    single-block re-crawl does not move it back)."""
    row, _ = Completeness.objects.get_or_create(chain=chain, label=label)
    if row.proven_through is None or row.proven_through < through:
        row.proven_through = through
        row.save(update_fields=["proven_through", "modified_at"])


def completeness_unproven(*, chain: str, label: str, before: int, why: str) -> None:
    """Blocks before `before` were scanned without the proof: on /health, and one WARNING per process."""
    row, _ = Completeness.objects.get_or_create(chain=chain, label=label)
    if row.unproven_before is None or row.unproven_before < before:
        row.unproven_before = before
        row.save(update_fields=["unproven_before", "modified_at"])
    if (chain, label) not in _warned_unproven:
        _warned_unproven.add((chain, label))
        logger.warning(
            "crawl %s on %s: the provider keeps no historical state (%s); completeness unproven before block %d, "
            "those blocks are scanned without the balance proof",
            label,
            chain,
            why,
            before,
        )
