"""The public list of confirmed donations (/proof/donations.csv): only what the chain shows anyway, plus how
each was priced, so anyone can add them up against the published proof ranges and re-derive every token
count with the crediting rule.

Rows leave chain by chain in block order, a chunk at a time (keyset pagination on (chain, block_number, id),
served by donation_chain_block_idx), so the memory a download takes does not grow with the sale. PostgreSQL renders
the amounts (NUMERIC::text keeps the column's scale, never an exponent) and the times.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.db import connection

CHUNK = 2000

HEADER = (
    "chain",
    "tx_hash",
    "log_index",
    "trace_address",
    "block_number",
    "block_hash",
    "donor",
    "asset",
    "amount",
    "usd_amount",
    "tokens",
    "token_price",
    "eth_price",
    "confirmed_at",
)

# `confirmed_at` is the confirmation time (the migration gave older confirmed rows their `modified_at`: a
# confirmed row is never written again, DESIGN.md invariant 4).
_CHUNK_SQL = """
    SELECT chain, id, block_number, tx_hash, COALESCE(log_index::text, ''), COALESCE(trace_address, ''), block_hash,
           address, asset, amount::text, usd_amount::text, tokens::text, price::text, COALESCE(eth_price::text, ''),
           to_char(COALESCE(confirmed_at, modified_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    FROM donation
    WHERE status = 'confirmed' AND (chain, block_number, id) > (%s, %s, %s)
    ORDER BY chain, block_number, id
    LIMIT %s
"""


class _Line:
    """csv.writer's file: hands back the line it was given instead of keeping it."""

    def write(self, line: str) -> str:
        return line


def confirmed_donation_lines(chunk: int = CHUNK) -> Iterator[str]:
    """The CSV, line by line: the header, then every confirmed donation, chain by chain in block order."""
    writer = csv.writer(_Line(), lineterminator="\n")
    yield writer.writerow(HEADER)
    after: tuple[str, int, int] = ("", -1, 0)
    while True:
        with connection.cursor() as cursor:
            cursor.execute(_CHUNK_SQL, [*after, chunk])
            rows = cursor.fetchall()
        for row in rows:
            yield writer.writerow((row[0], row[3], row[4], row[5], row[2], *row[6:]))
        if len(rows) < chunk:
            return
        after = (rows[-1][0], rows[-1][2], rows[-1][1])


def confirmed_donations_version() -> str:
    """Changes whenever the CSV would: the number of confirmed rows and the newest change among them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(modified_at) FROM donation WHERE status = 'confirmed'")
        count, newest = cursor.fetchone()
    return f"{count}-{newest.timestamp() if newest else 0}"
