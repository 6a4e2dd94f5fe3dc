"""Every configuration rule: a bad value stops the process, names the variable, leaks no secret."""

from __future__ import annotations

import re

import pytest

from dws_project.config import ConfigError, load_config
from dws_project.config_values import parse_donation_address
from tests.processes import ROOT, base_environment, leaked_secrets, run_manage

VALID_USDT = "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:6"
VALID_USDC = "usdc:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48:6"
TWO_FERNET_KEYS = "CglKLesre-9og46v_kMsXlhVQCeM58u_j7ZwhTbuYzw=,qUOZGNSodj3Efd4cDUCd1bzF3g5YBvBC3sqBnZpNfK8="

BAD_VALUES = [
    ("DATABASE_URL", None),
    ("DATABASE_URL", "mysql://root@127.0.0.1/dws"),
    ("DATABASE_URL", "postgres://"),
    ("DWS_DB_SSLMODE", "required"),
    ("DWS_DB_SSLMODE", "on"),
    ("REDIS_URL", "http://127.0.0.1:6379/0"),
    ("DWS_DONATION_ADDRESS", None),
    ("DWS_DONATION_ADDRESS", "0x1234"),
    ("DWS_DONATION_ADDRESS", "a0Ee7A142d267C1f36714E4a8F75612F20a79720"),
    ("DWS_DONATION_ADDRESS", "0xg0ee7a142d267c1f36714e4a8f75612f20a79720"),
    ("DWS_DONATION_ADDRESS", "0xA0eE7A142d267C1f36714E4a8F75612F20a79720"),  # checksum broken
    ("DWS_DONATION_ADDRESS", "0x0000000000000000000000000000000000000000"),  # the zero address: unspendable
    ("DWS_DONATION_ADDRESS", "0x0000000000000000000000000000000000000001"),  # ecrecover, a precompile
    ("DWS_DONATION_ADDRESS", "0x00000000000000000000000000000000000000FF"),  # the precompile range's end
    ("DWS_DONATION_ADDRESS", "0x000000000000000000000000000000000000dEaD"),  # the burn address
    ("DWS_STABLE_COINS", None),
    ("DWS_STABLE_COINS", " , "),
    ("DWS_STABLE_COINS", "dai:0x6B175474E89094C44Da98b954EedeAC495271d0F:18"),
    ("DWS_STABLE_COINS", "USDT:0xdAC17F958D2ee523a2206206994597C13D831ec7:6"),
    ("DWS_STABLE_COINS", "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec8:6"),
    ("DWS_STABLE_COINS", "usdt:0xdac17f958d2ee523a2206206994597c13d831e:6"),
    ("DWS_STABLE_COINS", "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:1"),
    ("DWS_STABLE_COINS", "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:0"),
    ("DWS_STABLE_COINS", "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:19"),
    ("DWS_STABLE_COINS", "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7:six"),
    ("DWS_STABLE_COINS", "usdt:0xdAC17F958D2ee523a2206206994597C13D831ec7"),
    ("DWS_STABLE_COINS", f"{VALID_USDT},{VALID_USDT.replace('6', '6', 1)}"),
    ("DWS_SALE_PARAMS", None),
    ("DWS_SALE_PARAMS", "0:0.001"),
    ("DWS_SALE_PARAMS", "100000000:0"),
    ("DWS_SALE_PARAMS", "100000000:-0.001"),
    ("DWS_SALE_PARAMS", "-5:0.001"),
    ("DWS_SALE_PARAMS", "100000000:abc"),
    ("DWS_SALE_PARAMS", "100000000:NaN"),
    ("DWS_SALE_PARAMS", "100000000"),
    ("DWS_SALE_PARAMS", "250000000:0.001,100000000:0.0015"),
    ("ETH_RPC_URL", None),
    ("ETH_RPC_URL", "http://node.example.org/v3/rpcKEY-9f8e7d6c5b4a"),
    ("ETH_RPC_URL", "http://10.1.2.3:8545/?apikey=rpcKEY-9f8e7d6c5b4a"),
    ("ETH_RPC_URL", "ws://127.0.0.1:8545"),
    ("ETH_RPC_URL", "node.example.org/rpcKEY-9f8e7d6c5b4a"),
    ("DWS_MAX_TIMESTAMP_AGE", "301"),
    ("DWS_MAX_TIMESTAMP_AGE", "0"),
    ("DWS_MAX_TIMESTAMP_AGE", "-1"),
    ("DWS_MAX_TIMESTAMP_AGE", "thirty"),
    ("DWS_START_BLOCK", "-1"),
    ("DWS_RPC_CHECK_URL", "http://node.example.org/v3/rpcKEY-9f8e7d6c5b4a"),
    ("DWS_RPC_CHECK_URL", "ws://127.0.0.1:8546"),
    ("DWS_RPC_MAX_ANSWER_MB", "0"),
    ("DWS_RPC_MAX_ANSWER_MB", "2000"),
    ("DWS_RPC_MAX_ANSWER_MB", "32MB"),
    ("DWS_RPC_MAX_IN_FLIGHT", "0"),
    ("DWS_RPC_MAX_IN_FLIGHT", "65"),
    ("DWS_RPC_MAX_IN_FLIGHT", "four"),
    ("DWS_CHAIN_ID", None),
    ("DWS_CHAIN_ID", "mainnet"),
    ("DWS_CHAIN_ID", "0"),
    ("DWS_TT_PRIVATE_KEY", "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f3623"),
    ("DWS_VENUE_KRAKEN_URL", "http://api.kraken.example"),
    ("DWS_VENUE_BINANCE_URL", "https://api.binance.com/api/v3/ticker/24hr"),
    ("DWS_TRUSTED_PROXIES", "10.0.0.0/33"),
    ("DJANGO_SECRET_KEY", None),
    ("DJANGO_SECRET_KEY", "short"),
    ("DJANGO_DEBUG", "maybe"),
    ("DWS_LOG_LEVEL", "LOUD"),
    ("DWS_HTTPS", "yes please"),
    ("DWS_CSRF_TRUSTED_ORIGINS", "dws.example.org"),
    ("DWS_ADMIN_ALLOWED_NETWORKS", "10.0.0.0/33"),
    ("DWS_SECRETS_KEY", "not-a-fernet-key-0123456789"),
    ("DWS_SECRETS_KEY", "CglKLesre-9og46v_kMsXlhVQCeM58u_j7ZwhTbuYzw=,short"),
    ("DWS_WEBHOOK_ALLOW_LOOPBACK", "on"),  # no development chain: webhooks stay off this machine
    ("DWS_WEBHOOK_ALLOW_LOOPBACK", "maybe"),
    ("DWS_EXPLORER_URL", "https://etherscan.io/tx/"),  # no {tx}: every link would be the same page
    ("DWS_EXPLORER_URL", "https://etherscan.io/tx/{tx}#{tx}"),
    ("DWS_EXPLORER_URL", "https://etherscan.io/{chain}/tx/{tx}"),
    ("DWS_EXPLORER_URL", "http://etherscan.io/tx/{tx}"),
    ("DWS_EXPLORER_URL", "javascript:alert(1)//{tx}"),
    ("DWS_EXPLORER_URL", "https://user:pw@etherscan.io/tx/{tx}"),
    ("DWS_EXPLORER_URL", "https://{tx}.example/"),
]


@pytest.mark.parametrize(("variable", "value"), BAD_VALUES)
def test_a_bad_value_stops_the_process_naming_the_variable(variable: str, value: str | None) -> None:
    env = base_environment()
    if value is None:
        env.pop(variable, None)
    else:
        env[variable] = value

    result = run_manage("check", env=env)

    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"configuration error: {variable} " in result.stderr
    assert "Traceback" not in output
    assert leaked_secrets(output) == []


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ETH_RPC_URL", "http://127.0.0.1:8545"),
        ("ETH_RPC_URL", "http://127.8.9.10:8545/key"),
        ("ETH_RPC_URL", "http://localhost:8545"),
        ("ETH_RPC_URL", "http://[::1]:8545"),
        ("DWS_DONATION_ADDRESS", "0xa0ee7a142d267c1f36714e4a8f75612f20a79720"),
        ("DWS_DONATION_ADDRESS", "0xA0EE7A142D267C1F36714E4A8F75612F20A79720"),
        ("DWS_STABLE_COINS", "usdc:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48:2"),
        ("DWS_STABLE_COINS", "usdc:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48:18"),
        ("DWS_SALE_PARAMS", "5:0.5"),
        ("DWS_MAX_TIMESTAMP_AGE", "300"),
        ("DWS_VENUE_KRAKEN_URL", "http://127.0.0.1:18600"),
        ("DWS_EXPLORER_URL", "https://etherscan.io/tx/{tx}"),
        ("DWS_EXPLORER_URL", "http://127.0.0.1:5100/tx/{tx}?tab=logs"),
        (
            "DWS_SECRETS_KEY",
            "CglKLesre-9og46v_kMsXlhVQCeM58u_j7ZwhTbuYzw=,qUOZGNSodj3Efd4cDUCd1bzF3g5YBvBC3sqBnZpNfK8=",
        ),
    ],
)
def test_a_good_value_starts(variable: str, value: str) -> None:
    env = base_environment()
    env[variable] = value

    result = run_manage("check", env=env)

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_every_bad_variable_is_reported_at_once() -> None:
    env = base_environment()
    env["DWS_SALE_PARAMS"] = "0:1"
    env["DWS_MAX_TIMESTAMP_AGE"] = "999"

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert "DWS_SALE_PARAMS" in result.stderr
    assert "DWS_MAX_TIMESTAMP_AGE" in result.stderr


def test_a_plaintext_remote_rpc_url_is_refused_showing_only_scheme_and_host() -> None:
    env = base_environment()
    env["ETH_RPC_URL"] = "http://node.example.org/v3/rpcKEY-9f8e7d6c5b4a?apikey=rpcKEY-9f8e7d6c5b4a"

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert "http://node.example.org" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


def test_development_mode_runs_without_a_secret_key_on_a_development_chain() -> None:
    env = base_environment()
    env.pop("DJANGO_SECRET_KEY")
    env["DJANGO_DEBUG"] = "true"
    env["DWS_CHAIN_ID"] = "31337"

    assert run_manage("check", env=env).returncode == 0


@pytest.mark.parametrize("chain_id", [None, "1"])
def test_debug_is_refused_outside_a_development_chain(chain_id: str | None) -> None:
    env = base_environment()
    env.pop("DJANGO_SECRET_KEY")
    env["DJANGO_DEBUG"] = "true"
    if chain_id:
        env["DWS_CHAIN_ID"] = chain_id
    else:
        env.pop("DWS_CHAIN_ID")

    result = run_manage("check", env=env)

    assert result.returncode == 2
    assert "DJANGO_DEBUG is only accepted on a development chain (every chain's id one of 1337, 31337)" in result.stderr
    assert (f"DWS_CHAIN_ID is {chain_id}" if chain_id else "DWS_CHAIN_ID is required but not set") in result.stderr


def test_every_variable_the_configuration_reads_is_documented_in_env_example() -> None:
    import re

    from tests.processes import ROOT

    source = "".join((ROOT / "dws_project" / name).read_text() for name in ("config.py", "chain_settings.py"))
    read = set(re.findall(r'(?:required|optional)\(\s*f?"([A-Z][A-Z0-9_{}a-z]+)"', source))
    read = {name.replace("{venue}", "BINANCE") for name in read}
    assert {"DATABASE_URL", "DWS_SALE_PARAMS", "DWS_CHAINS", "DWS_VENUE_BINANCE_URL"} <= read
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / "deploy" / "env.example").read_text(), re.M))
    assert read - documented == set()
    # every chain's settings, by their names for chains eth and base
    chain_settings = {"ETH_RPC_URL", "DWS_CHAIN_ID", "DWS_STABLE_COINS", "DWS_START_BLOCK", "DWS_TRACE"}
    chain_settings |= {"DWS_RPC_CHECK_URL", "DWS_EXPLORER_URL", "DWS_ETH_LABEL", "DWS_BASE_RPC_URL"}
    chain_settings |= {"DWS_BASE_CHAIN_ID", "DWS_BASE_STABLE_COINS", "DWS_BASE_WALLET_RPC_URL", "DWS_BASE_LABEL"}
    assert chain_settings - documented == set()


def test_a_burn_or_precompile_address_is_refused_saying_why() -> None:
    env = base_environment()
    env["DWS_DONATION_ADDRESS"] = "0x0000000000000000000000000000000000000009"

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert "DWS_DONATION_ADDRESS " in result.stderr
    assert "precompile" in result.stderr


def test_env_example_leaves_the_donation_address_to_the_operator() -> None:
    """A copied env.example starts only once the operator has put their own address in (it is required);
    never with an address that takes money and gives it to no one."""
    example = (ROOT / "deploy" / "env.example").read_text()
    (address,) = re.findall(r"^DWS_DONATION_ADDRESS=(\S*)$", example, re.M)

    assert address == "" or parse_donation_address(address) == address.lower()


def test_the_check_provider_must_be_another_provider_than_eth_rpc_url() -> None:
    env = base_environment()
    env["DWS_RPC_CHECK_URL"] = env["ETH_RPC_URL"]

    result = run_manage("check", env=env)

    assert result.returncode != 0
    assert "configuration error: DWS_RPC_CHECK_URL must name another provider than ETH_RPC_URL" in result.stderr
    assert leaked_secrets(result.stdout + result.stderr) == []


@pytest.mark.parametrize(
    ("var", "value"),
    [("DWS_START_BLOCK", "²"), ("DWS_CHAIN_ID", "٣"), ("DWS_MAX_TIMESTAMP_AGE", "3²"), ("DWS_SALE_PARAMS", "1²:0.1")],
)
def test_a_number_in_other_scripts_digits_is_refused_naming_the_variable(var, value) -> None:
    """str.isdigit() takes '²' (which int() refuses) and int() takes '٣': neither may pass as a number."""
    with pytest.raises(ConfigError) as refused:
        load_config(base_environment() | {var: value})
    assert var in str(refused.value)
    assert "invalid literal" not in str(refused.value)
