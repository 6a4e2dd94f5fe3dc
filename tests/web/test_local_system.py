"""`make run`'s pieces: the dev chain set-up, the dev price source (refused off a dev chain) and
`simulate_donations`, run as an operator runs them, against real anvil nodes."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from crawlers.runs.crawl import crawl
from donations.models import Donation
from prices.models import ETH, Price, PriceRequest, PriceRequestStatus
from prices.requests import serve_price_requests
from prices.services import fetch_prices
from tests.chain import ACCOUNTS, DONATION_ADDRESS, Anvil
from tests.configs import configured
from tests.processes import ROOT, base_environment, run_manage


def env_file(name: str) -> dict[str, str]:
    text = (Path(__file__).resolve().parents[2] / "deploy" / name).read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))


ENV_LOCAL = env_file("env.local")
LOCAL_CHAINS = env_file("env.local-chain")  # make run's two local chains: eth and the rollup
USDT, USDC = (entry.split(":")[1].lower() for entry in ENV_LOCAL["DWS_STABLE_COINS"].split(","))
# The rollup's own coins, USDC then USDT (deploy/env.local-chain)
ROLLUP_USDC, ROLLUP_USDT = (entry.split(":")[1].lower() for entry in LOCAL_CHAINS["DWS_ROLLUP_STABLE_COINS"].split(","))


def dev_environment(anvil: Anvil, **overrides: str) -> dict[str, str]:
    env = base_environment()
    env.update(
        DWS_STABLE_COINS=ENV_LOCAL["DWS_STABLE_COINS"],
        DWS_SALE_PARAMS=ENV_LOCAL["DWS_SALE_PARAMS"],
        ETH_RPC_URL=anvil.url,
        DWS_CHAIN_ID="31337",
    )
    return env | overrides


def two_chain_environment(eth: Anvil, rollup: Anvil, **overrides: str) -> dict[str, str]:
    """make run's environment on two local chains (deploy/env.local-chain), at these nodes."""
    env = dev_environment(eth) | {k: v for k, v in LOCAL_CHAINS.items() if k.startswith(("DWS_CHAINS", "DWS_ROLLUP_"))}
    env.update(DWS_ROLLUP_RPC_URL=rollup.url)
    return env | overrides


@pytest.fixture
def fresh_anvil():
    with Anvil() as anvil:
        yield anvil


@pytest.fixture
def fresh_rollup():
    """A fresh anvil on the other development chain id, as make run's local rollup."""
    with Anvil(extra_args=["--chain-id", LOCAL_CHAINS["DWS_ROLLUP_CHAIN_ID"]]) as anvil:
        yield anvil


class TestDevChainSetup:
    def test_it_deploys_the_coins_at_the_configured_addresses_and_funds_the_dev_accounts(self, fresh_anvil) -> None:
        result = run_manage("dev_chain_setup", env=dev_environment(fresh_anvil))

        assert result.returncode == 0, result.stderr
        assert "contracts deployed: usdt, usdc" in result.stdout
        for token in (USDT, USDC):
            assert fresh_anvil.rpc("eth_getCode", token, "latest") not in ("0x", "")
            for account in ACCOUNTS[:9]:
                assert fresh_anvil.token_balance(token, account) == 1_000_000 * 10**6
            assert fresh_anvil.token_balance(token, DONATION_ADDRESS) == 0  # donations start from zero

    def test_running_it_again_keeps_what_is_there(self, fresh_anvil) -> None:
        env = dev_environment(fresh_anvil)
        assert run_manage("dev_chain_setup", env=env).returncode == 0
        fresh_anvil.transfer_token(USDT, ACCOUNTS[1], DONATION_ADDRESS, 5 * 10**6)

        again = run_manage("dev_chain_setup", env=env)

        assert again.returncode == 0, again.stderr
        assert "contracts deployed: none (already there); 0 coin balance(s) funded" in again.stdout
        assert fresh_anvil.token_balance(USDT, ACCOUNTS[1]) == 999_995 * 10**6

    def test_a_used_deployer_account_is_reported_not_papered_over(self, fresh_anvil) -> None:
        fresh_anvil.send_eth(ACCOUNTS[0], ACCOUNTS[1], 1)  # nonce 0 is gone: USDT cannot land where configured

        result = run_manage("dev_chain_setup", env=dev_environment(fresh_anvil))

        assert result.returncode != 0
        assert f"DWS_STABLE_COINS expects {USDT}" in result.stderr
        assert "fresh chain" in result.stderr

    def test_on_two_chains_the_rollup_gets_coins_of_its_own_where_eth_has_none(self, fresh_anvil, fresh_rollup) -> None:
        env = two_chain_environment(fresh_anvil, fresh_rollup)

        result = run_manage("dev_chain_setup", env=env)

        assert result.returncode == 0, result.stderr
        assert "dev chain eth (31337): contracts deployed: usdt, usdc" in result.stdout
        assert "dev chain rollup (1337): contracts deployed: usdc, usdt" in result.stdout
        assert {ROLLUP_USDC, ROLLUP_USDT}.isdisjoint({USDT, USDC})
        for token in (ROLLUP_USDC, ROLLUP_USDT):
            assert fresh_rollup.token_balance(token, ACCOUNTS[1]) == 1_000_000 * 10**6
            assert fresh_anvil.rpc("eth_getCode", token, "latest") in ("0x", "")  # nothing there on eth
        for token in (USDT, USDC):  # nor eth's coins on the rollup: the deployer burnt those nonces
            assert fresh_rollup.rpc("eth_getCode", token, "latest") in ("0x", "")
        again = run_manage("dev_chain_setup", env=env)
        assert again.returncode == 0, again.stderr
        assert "dev chain rollup (1337): contracts deployed: none (already there); 0 coin balance(s) funded" in (
            again.stdout
        )

    def test_it_refuses_a_chain_that_is_not_a_dev_chain(self) -> None:
        with Anvil(extra_args=["--chain-id", "1"]) as mainnet_id:
            result = run_manage("dev_chain_setup", env=dev_environment(mainnet_id, DWS_CHAIN_ID="1"))
            assert mainnet_id.head() == 0  # nothing was sent

        assert result.returncode != 0
        assert "refusing: the node reports chain id 1, not a development chain" in result.stderr


class TestDevPriceConfiguration:
    @pytest.mark.parametrize("chain_id", ["1", None])
    def test_the_dev_price_is_refused_off_a_dev_chain_naming_the_variable(self, chain_id) -> None:
        env = base_environment()
        env["DWS_DEV_ETH_PRICE"] = "2000"
        if chain_id:
            env["DWS_CHAIN_ID"] = chain_id
        else:
            env.pop("DWS_CHAIN_ID")

        result = run_manage("check", env=env)

        assert result.returncode != 0
        assert "configuration error: DWS_DEV_ETH_PRICE is only accepted on a development chain" in result.stderr
        assert (f"DWS_CHAIN_ID is {chain_id}" if chain_id else "DWS_CHAIN_ID is required but not set") in result.stderr

    @pytest.mark.parametrize("value", ["0", "-1", "abc", "NaN", "Infinity"])
    def test_a_dev_price_that_is_not_a_positive_decimal_is_refused(self, value) -> None:
        env = base_environment() | {"DWS_DEV_ETH_PRICE": value, "DWS_CHAIN_ID": "31337"}

        result = run_manage("check", env=env)

        assert result.returncode != 0
        assert "configuration error: DWS_DEV_ETH_PRICE must be a positive decimal" in result.stderr

    def test_the_dev_price_is_accepted_on_a_dev_chain(self) -> None:
        env = base_environment() | {"DWS_DEV_ETH_PRICE": "2000.50", "DWS_CHAIN_ID": "31337"}

        result = run_manage("check", env=env)

        assert result.returncode == 0, result.stderr


@pytest.fixture
def dev_price(settings):
    settings.CONFIG = configured(settings.CONFIG, chain_id=31337, dev_eth_price=Decimal("2000.50"))


@pytest.mark.django_db
class TestDevPriceSource:
    def test_the_minute_cycle_records_the_dev_price_and_says_so(self, dev_price) -> None:
        now = datetime(2026, 11, 30, 5, 1, 42, tzinfo=UTC)
        # Venue URLs that cannot answer: the dev source must not need them.
        result = fetch_prices(now=now, urls={v: "http://127.0.0.1:9" for v in ("binance", "kraken")}, timeout=0.5)

        assert result.written
        row = Price.objects.get(asset=ETH)
        assert (row.price, row.created_at) == (Decimal("2000.50"), datetime(2026, 11, 30, 5, 1, tzinfo=UTC))
        assert row.sources["dev"]["price"] == "2000.50"
        assert row.sources["dev"]["chain_ids"] == [31337]

    def test_a_price_request_is_served_from_the_dev_price(self, dev_price) -> None:
        minute = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
        PriceRequest.objects.create(asset=ETH, requested_at=minute)

        result = serve_price_requests(now=datetime(2026, 11, 30, 5, 0, tzinfo=UTC), timeout=0.5)

        assert (result.claimed, result.succeeded) == (1, 1)
        assert PriceRequest.objects.get().status == PriceRequestStatus.SUCCEEDED
        assert json.dumps(Price.objects.get(created_at=minute).sources).startswith('{"dev"')


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("campaign_row")
def test_simulated_donations_are_found_by_the_crawlers(fresh_anvil, settings, dev_price) -> None:
    env = dev_environment(fresh_anvil)
    assert run_manage("dev_chain_setup", env=env).returncode == 0
    start = fresh_anvil.head()
    settings.CONFIG = configured(settings.CONFIG, rpc_url=fresh_anvil.url, start_block=start + 1)
    fetch_prices()  # the dev price for this minute, as beat's first cycle writes it

    result = run_manage("simulate_donations", "--count", "6", "--interval", "0", "--seed", "7", env=env)

    assert result.returncode == 0, result.stderr
    sent = [line for line in result.stdout.splitlines() if line.startswith("donation ")]
    assert len(sent) == 6
    crawl("latest")
    recorded = Donation.objects.all()
    assert recorded.count() == 6
    assert {d.address for d in recorded} <= set(ACCOUNTS[2:6])  # the default four simulated donors
    assert {d.tx_hash for d in recorded} == {line.rsplit("tx ", 1)[1].rstrip(")") for line in sent}


def test_simulate_donations_refuses_a_chain_that_is_not_a_dev_chain() -> None:
    with Anvil(extra_args=["--chain-id", "1"]) as mainnet_id:
        env = dev_environment(mainnet_id)
        env["DWS_CHAIN_ID"] = "1"  # configured as the node reports it: still not a development chain
        result = run_manage("simulate_donations", "--count", "1", env=env)
        assert mainnet_id.head() == 0

    assert result.returncode != 0
    assert "refusing: the node reports chain id 1" in result.stderr


def test_simulate_donations_says_so_when_no_node_answers() -> None:
    env = base_environment() | {"ETH_RPC_URL": "http://127.0.0.1:9"}

    result = run_manage("simulate_donations", "--count", "1", env=env)

    assert result.returncode != 0
    assert "no answer from http://127.0.0.1:9" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_demo_script_runs_simulate_donations_with_make_runs_environment(fresh_anvil, fresh_rollup) -> None:
    """make run's two local chains: the script donates on each in turn, from a plain environment."""
    assert run_manage("dev_chain_setup", env=two_chain_environment(fresh_anvil, fresh_rollup)).returncode == 0
    env = dev_environment(fresh_anvil)
    env.pop("ETH_RPC_URL")  # the script points at the local chains' ports, as `make run` does
    env["DWS_LOCAL_CHAIN_PORT"] = str(fresh_anvil.port)
    env["DWS_LOCAL_ROLLUP_PORT"] = str(fresh_rollup.port)
    before = fresh_anvil.head(), fresh_rollup.head()

    result = subprocess.run(
        ["deploy/simulate-donations.sh", "--count", "4", "--interval", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    chains = re.findall(r"^donation \d/4: .* on (\w+) \(tx 0x[0-9a-f]{64}\)$", result.stdout, flags=re.MULTILINE)
    assert chains == ["eth", "rollup", "eth", "rollup"]
    assert fresh_anvil.head() > before[0]
    assert fresh_rollup.head() > before[1]
