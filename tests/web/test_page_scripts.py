"""The page's JavaScript money path, checked against an independent Python implementation.

The token estimate must follow the sale's formulas exactly (ETH: ceiling(DA * EP / TP); stable coin:
ceiling(DA / TP)); the backend's `donations.rules.donation_tokens` is the reference, on random cases
here and on the shared vectors (tests/vectors/tokens.json) in the Node tests. The Node unit tests run here too,
so `make test` (pytest) covers them.
"""

from __future__ import annotations

import json
import random
import subprocess
from decimal import Decimal
from pathlib import Path

from eth_abi import encode
from eth_utils import function_signature_to_4byte_selector

from donations.rules import donation_tokens
from dws_project.config_values import parse_sale_params

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = ROOT / "tests" / "web" / "js"
# The development tiers and a few prices with awkward digits.
TIER_PRICES = [t.token_price for t in parse_sale_params("100000000:0.001,250000000:0.0015,500000000:0.002")]
TOKEN_PRICES = [*TIER_PRICES, Decimal("0.00123"), Decimal("0.0333"), Decimal("0.07"), Decimal("1.1")]


def evaluate(calls: list[dict]) -> list:
    result = subprocess.run(
        ["node", str(JS_TESTS / "evaluate.mjs")],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


def seed_formula(asset: str, amount: Decimal, eth_price: Decimal | None, token_price: Decimal) -> int:
    """The backend's one token rule: the page must give exactly what the donation will be credited."""
    return donation_tokens(asset=asset, amount=amount, eth_price=eth_price, token_price=token_price)


def decimal_text(rng: random.Random, whole_digits: int, places: int) -> str:
    whole = str(rng.randrange(10**whole_digits))
    if places == 0:
        return whole if whole != "0" else "1"
    text = f"{whole}.{rng.randrange(10**places):0{places}d}"
    return text if Decimal(text) > 0 else f"{whole}.{'0' * (places - 1)}1"


def estimate_cases() -> list[tuple[str, str, str | None, str]]:
    rng = random.Random(20231023)
    cases = []
    for _ in range(1500):
        asset = rng.choice(["eth", "usdt", "usdc"])
        places = rng.randint(0, 8 if asset == "eth" else 6)
        amount = decimal_text(rng, rng.randint(1, 7), places)
        eth_price = decimal_text(rng, 4, rng.randint(0, 8)) if asset == "eth" else None
        cases.append((asset, amount, eth_price, str(rng.choice(TOKEN_PRICES))))
    # Exact multiples of the token price and one smallest step either side: the ceiling's edges.
    for price in TIER_PRICES:
        for tokens in (1, 999, 100_000, 123_456_789):
            exact = Decimal(tokens) * price
            step = Decimal("0.000001")
            for edge in (exact, exact + step, exact - step):
                if edge > 0:
                    cases.append(("usdc", format(edge, "f"), None, str(price)))
            eth_exact = Decimal(tokens) * price / Decimal("2000")
            cases.append(("eth", format(eth_exact, "f"), "2000", str(price)))
            cases.append(("eth", format(eth_exact + Decimal("0.00000001"), "f"), "2000", str(price)))
    return cases


def test_the_node_unit_tests_pass() -> None:
    result = subprocess.run(
        ["node", "--test", str(JS_TESTS)], capture_output=True, text=True, timeout=120, check=False, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout


def test_the_page_estimate_is_the_seed_formula_for_every_case() -> None:
    cases = estimate_cases()
    calls = [
        {"fn": "estimateTokens", "args": {"asset": a, "amount": amt, "ethPrice": ep, "tokenPrice": tp}}
        for a, amt, ep, tp in cases
    ]
    got = evaluate(calls)
    mismatches = [
        (case, answer)
        for case, answer in zip(cases, got, strict=True)
        if answer
        != str(seed_formula(case[0], Decimal(case[1]), Decimal(case[2]) if case[2] else None, Decimal(case[3])))
    ]
    assert mismatches == []
    assert len(cases) > 1500


def test_base_units_are_exact_for_wei_and_coin_units() -> None:
    rng = random.Random(7)
    cases = [(decimal_text(rng, rng.randint(1, 9), rng.randint(0, 8)), 18) for _ in range(300)]
    cases += [(decimal_text(rng, rng.randint(1, 9), rng.randint(0, 6)), 6) for _ in range(300)]
    got = evaluate([{"fn": "toBaseUnits", "args": [amount, decimals]} for amount, decimals in cases])
    assert got == [str(int(Decimal(amount).scaleb(decimals))) for amount, decimals in cases]


def test_transfer_calldata_matches_the_abi_encoding() -> None:
    rng = random.Random(11)
    cases = [
        ("0x" + "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(40)), rng.randrange(1, 2**200))
        for _ in range(50)
    ]
    got = evaluate([{"fn": "erc20TransferData", "args": [to, str(units)]} for to, units in cases])
    selector = function_signature_to_4byte_selector("transfer(address,uint256)")
    expected = ["0x" + (selector + encode(["address", "uint256"], [to.lower(), units])).hex() for to, units in cases]
    assert got == expected
