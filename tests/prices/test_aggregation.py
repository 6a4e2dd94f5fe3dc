"""The six aggregation steps: the seed's table cases and properties that hold for any input."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from prices.aggregation import VenueQuote, aggregate

VENUE_NAMES = ("binance", "bitfinex", "cexio", "coinbase", "kraken", "kucoin")


def quotes(**prices: str | None) -> list[VenueQuote]:
    return [
        VenueQuote(venue, None if price is None else Decimal(price), None if price else "HTTP 503")
        for venue, price in prices.items()
    ]


def dropped(result) -> dict[str, str]:
    return {d.venue: d.reason for d in result.dropped}


def test_six_consistent_quotes_give_their_mean():
    result = aggregate(
        quotes(binance="2000", coinbase="2001", kraken="2002", kucoin="2003", bitfinex="2004", cexio="2005")
    )

    assert result.price == Decimal("2002.5")
    assert result.median == Decimal("2002.5")
    assert len(result.used) == 6
    assert result.dropped == ()


def test_one_stale_quote_among_five_consistent_is_dropped_alone():
    result = aggregate(
        quotes(binance="2000", coinbase="2001", kraken="2002", kucoin="2003", bitfinex="2004", cexio="1700")
    )

    assert dropped(result) == {"cexio": "deviates 15.06% from the median 2001.5"}
    assert result.price == Decimal("2002")  # mean of the five that agree
    assert [q.venue for q in result.used] == ["binance", "coinbase", "kraken", "kucoin", "bitfinex"]


def test_two_depegged_usdt_venues_cannot_drag_the_price():
    # USDT at 0.85 USD: binance and kucoin quote ETH ~17.6% above the USD venues.
    result = aggregate(
        quotes(binance="2353", kucoin="2354", coinbase="2000", kraken="2001", bitfinex="2002", cexio="2000.5")
    )

    assert set(dropped(result)) == {"binance", "kucoin"}
    assert result.price == Decimal("2000.875")


def test_exactly_four_quotes_meet_the_quorum():
    result = aggregate(quotes(binance="2000", coinbase="2002", kraken="2004", kucoin="2006", bitfinex=None, cexio=None))

    assert result.price == Decimal("2003")
    assert dropped(result) == {"bitfinex": "HTTP 503", "cexio": "HTTP 503"}


def test_three_quotes_are_below_the_quorum_and_nothing_is_written():
    result = aggregate(quotes(binance="2000", coinbase="2002", kraken="2004", kucoin=None, bitfinex=None, cexio=None))

    assert result.price is None
    assert result.reason == "quorum not met: 3 usable quotes, 4 needed"
    assert result.used == ()
    assert dropped(result)["binance"] == "cycle below quorum"


def test_exactly_three_survivors_of_the_deviation_check_are_enough():
    result = aggregate(
        quotes(binance="2000", coinbase="2001", kraken="2002", kucoin="2600", bitfinex="1500", cexio=None)
    )

    assert result.price == Decimal("2001")
    assert set(dropped(result)) == {"kucoin", "bitfinex", "cexio"}


def test_two_survivors_of_the_deviation_check_write_nothing():
    result = aggregate(quotes(binance="1000", coinbase="1001", kraken="2000", kucoin="2001", bitfinex=None, cexio=None))

    assert result.price is None
    assert result.reason == "only 0 quotes within 10% of the median"
    assert result.median == Decimal("1500.5")


def test_when_every_venue_fails_nothing_is_written_and_each_reason_is_kept():
    result = aggregate(
        [VenueQuote(name, None, f"{name} timed out") for name in VENUE_NAMES],
    )

    assert result.price is None
    assert dropped(result) == {name: f"{name} timed out" for name in VENUE_NAMES}


def test_a_non_positive_quote_drops_out_before_the_quorum_count():
    result = aggregate(quotes(binance="0", coinbase="-5", kraken="2000", kucoin="2001", bitfinex="2002", cexio=None))

    assert result.price is None
    assert dropped(result)["binance"] == "non-positive price 0"


def test_ties_in_price_are_ordered_by_venue_name():
    result = aggregate(quotes(kraken="2000", binance="2000", coinbase="2000", cexio="2000"))

    assert [q.venue for q in result.used] == ["binance", "cexio", "coinbase", "kraken"]


# --- properties -----------------------------------------------------------------------------------

prices = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("100000"), places=8)
cycle = st.lists(
    st.tuples(st.sampled_from(VENUE_NAMES), st.one_of(st.none(), prices)),
    min_size=0,
    max_size=6,
    unique_by=lambda pair: pair[0],
).map(lambda pairs: [VenueQuote(v, p, None if p is not None else "failed") for v, p in pairs])


@given(cycle, st.randoms())
def test_the_outcome_does_not_depend_on_the_order_venues_answered_in(quotes_, random):
    shuffled = list(quotes_)
    random.shuffle(shuffled)

    assert aggregate(shuffled) == aggregate(quotes_)


@given(cycle)
def test_a_price_is_only_made_from_at_least_three_survivors(quotes_):
    result = aggregate(quotes_)

    if result.price is not None:
        assert len(result.used) >= 3
    else:
        assert result.used == ()


@given(cycle)
def test_the_price_lies_within_the_survivors_range(quotes_):
    result = aggregate(quotes_)

    if result.price is not None:
        used = [q.price for q in result.used]
        assert min(used) <= result.price <= max(used)
        assert all(abs(p - result.median) <= result.median / 10 for p in used)


@given(cycle)
def test_every_venue_is_accounted_for_exactly_once(quotes_):
    result = aggregate(quotes_)

    accounted = [q.venue for q in result.used] + [d.venue for d in result.dropped]
    assert sorted(accounted) == sorted(q.venue for q in quotes_)
