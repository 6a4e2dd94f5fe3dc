"""The one token rule (donations.rules.donation_tokens): the shared vectors and its properties.

The vectors file is read by the page's JavaScript tests too (tests/web/js/money.test.mjs), so the
backend's count and the donor's estimate are held to the same numbers.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from donations.rules import donation_tokens, round_usd, usd_value

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "tokens.json").read_text())["vectors"]


def tokens(vector: dict) -> int:
    return donation_tokens(
        asset=vector["asset"],
        amount=Decimal(vector["amount"]),
        eth_price=None if vector["eth_price"] is None else Decimal(vector["eth_price"]),
        token_price=Decimal(vector["token_price"]),
    )


@pytest.mark.parametrize("vector", VECTORS, ids=[v["note"] for v in VECTORS])
def test_every_shared_vector_gives_its_tokens(vector):
    assert str(tokens(vector)) == vector["tokens"]


def test_the_vectors_hold_the_specification_and_issue_examples():
    by_note = {v["note"]: v["tokens"] for v in VECTORS}
    assert by_note["seed 000 user data example, first donation (usd_amount 1981.41)"] == "1981414"
    assert by_note["issue 11: a coin amount whose rounded USD would lose a token"] == "25013"
    assert by_note["issue 11: one unit of USDT buys one token"] == "1"


def test_the_rounded_usd_amount_is_not_what_the_tokens_come_from():
    # 250.123456 USDC is 250.12 USD to the cent; the tokens come from the amount itself.
    amount = Decimal("250.123456")
    assert round_usd(usd_value("usdc", amount, None)) == Decimal("250.12")
    assert donation_tokens(asset="usdc", amount=amount, eth_price=None, token_price=Decimal("0.01")) == 25_013


def test_it_refuses_an_eth_donation_without_an_eth_price_and_a_non_positive_token_price():
    with pytest.raises(ValueError, match="ETH price"):
        donation_tokens(asset="eth", amount=Decimal("1"), eth_price=None, token_price=Decimal("0.001"))
    with pytest.raises(ValueError, match="token price"):
        donation_tokens(asset="usdt", amount=Decimal("1"), eth_price=None, token_price=Decimal("0"))


# Amounts at the columns' scales (coins 10 decimals, ETH 8), ETH prices at price.price's (8 decimals),
# token prices at donation.price's (5 decimals).
coin_amounts = st.integers(min_value=1, max_value=10**18).map(lambda n: Decimal(n).scaleb(-10))
eth_amounts = st.integers(min_value=1, max_value=10**16).map(lambda n: Decimal(n).scaleb(-8))
eth_prices = st.integers(min_value=1, max_value=10**14).map(lambda n: Decimal(n).scaleb(-8))
token_prices = st.integers(min_value=1, max_value=10**7).map(lambda n: Decimal(n).scaleb(-5))
donations = st.one_of(
    st.tuples(st.sampled_from(["usdt", "usdc"]), coin_amounts, st.none(), token_prices),
    st.tuples(st.just("eth"), eth_amounts, eth_prices, token_prices),
)


def exact_quotient(asset: str, amount: Decimal, eth_price: Decimal | None, token_price: Decimal) -> Fraction:
    value = Fraction(amount) * (Fraction(eth_price) if asset == "eth" else 1)
    return value / Fraction(token_price)


@given(donations)
def test_tokens_are_never_below_the_exact_quotient_nor_more_than_one_above_it(donation):
    asset, amount, eth_price, token_price = donation
    got = donation_tokens(asset=asset, amount=amount, eth_price=eth_price, token_price=token_price)
    quotient = exact_quotient(asset, amount, eth_price, token_price)
    assert quotient <= got < quotient + 1


@given(donations, st.integers(min_value=1, max_value=10**12))
def test_tokens_are_monotone_in_the_amount(donation, extra_units):
    asset, amount, eth_price, token_price = donation
    more = amount + Decimal(extra_units).scaleb(amount.as_tuple().exponent)
    fewer = donation_tokens(asset=asset, amount=amount, eth_price=eth_price, token_price=token_price)
    assert donation_tokens(asset=asset, amount=more, eth_price=eth_price, token_price=token_price) >= fewer
