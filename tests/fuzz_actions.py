"""The chain fuzzer's vocabulary (tests/crawlers/runs/test_fuzz.py): actions that build a history on anvil.

Each action is a function of the world and a seeded `random.Random`; it sends its transactions and returns
a short description (the failing seed's action list is printed from these). The world's donation address
is a plain account, a Safe stand-in (tests/contracts/HandlerWallet.sol, its code installed before the
crawlers' first block: read in full), a real Safe 1.4.1 (tests/safe_wallet.py: read by its events, with
module executions and its owners' execTransaction) or an account that delegates to one by an EIP-7702
authorization it signs mid-history (or sets and clears one inside a step). Issue 32 added call bombs and
log bombs (answers past the fuzzer's small answer cap), CCTP mints (a donor's, the address's own, and a
mint nobody is named for) and the 7702 set-and-clear; issue 37 the real Safe, module pay-outs and SELFDESTRUCT payments.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.cctp import install_transmitters, receive, receive_call
from tests.chain import ACCOUNTS, DEPLOYER, DONATION_ADDRESS, Anvil, authorize_7702
from tests.safe_wallet import enable_module, exec_data, install_safe, module_execute, pay_by_selfdestruct

OWNER, PAYEE, HANDLER = ACCOUNTS[1], ACCOUNTS[6], ACCOUNTS[5]
DONORS = ACCOUNTS[2:9]
USDT = 10**6
GAS = hex(3_000_000)
BOMB_CALLS = 1_000  # ~170 KB of callTracer frames: past the fuzzer's 128 KiB answer cap, the block's other answers not
JUNK = 50_000  # bytes of a log bomb's log: one receipt fits the cap, three or more in one batch do not


@dataclass
class World:
    anvil: Anvil
    mode: str  # "account" | "contract" | "delegated" | "safe" (a real Safe 1.4.1, read by its events)
    traces: bool = True  # False: the provider has no trace method (an address with code is held then, by design)
    contracts: dict[str, str] = field(default_factory=dict)
    log_bombs: list[str] = field(default_factory=list)
    module: bool = False  # a real Safe's module is enabled
    self_destructs: list[tuple[str, int]] = field(default_factory=list)  # (tx, wei) paid by a SELFDESTRUCT

    @property
    def has_code(self) -> bool:
        return self.mode != "account"

    def call(self, to: str, signature: str, types: list[str], args: list, *, sender: str, wei: int = 0) -> str:
        data = self.anvil.call_data(signature, types, args)
        return self.anvil.send({"from": sender, "to": to, "value": hex(wei), "data": data, "gas": GAS})

    def own(self, to: str, wei: int, data: str = "0x") -> str:
        """The donation address makes a call: it signs it (an account), or its owner has it execute one (a
        real Safe: execTransaction, with the owner's pre-validated signature)."""
        if not self.has_code:
            return self.anvil.send({"from": DONATION_ADDRESS, "to": to, "value": hex(wei), "data": data, "gas": GAS})
        if self.mode == "safe":
            signed = exec_data(OWNER, to, wei, bytes.fromhex(data[2:]))
            return self.anvil.send({"from": OWNER, "to": DONATION_ADDRESS, "data": signed, "gas": GAS})
        payload = bytes.fromhex(data[2:])
        types = ["address", "uint256", "bytes"]
        return self.call(DONATION_ADDRESS, "execute(address,uint256,bytes)", types, [to, wei, payload], sender=OWNER)


def set_up(anvil: Anvil, mode: str, traces: bool = True) -> World:
    """The contracts the actions use, deployed (and funded) before the crawlers' first block."""
    world = World(anvil, mode, traces)
    for name in ("EthRelay", "DeepCall", "WrappedEth", "ForwardingWallet"):
        world.contracts[name] = anvil.deploy(name)
    world.contracts["EthForwarder"] = anvil.deploy("EthForwarder", sender=DONORS[0])
    world.contracts["PokeThenPay"] = anvil.deploy("PokeThenPay")
    # the Safe stand-in: its owner has it execute calls, and anyone can make it call out (a fallback handler)
    world.contracts["HandlerWallet"] = anvil.deploy("HandlerWallet", ["address", "address"], [OWNER, HANDLER])
    world.contracts["SafeLikeWallet"] = anvil.deploy("SafeLikeWallet", ["address"], [OWNER])
    world.contracts["CallBomb"] = anvil.deploy("CallBomb")
    world.log_bombs = [anvil.deploy("LogBomb") for _ in range(4)]
    for bomb in world.log_bombs:
        anvil.mint(anvil.coins["usdt"], bomb, 1_000_000 * USDT)
    install_transmitters(anvil, anvil.coins["usdc"])  # Circle's CCTP, minting the test USDC
    anvil.mint(anvil.coins["usdt"], DONATION_ADDRESS, 10_000 * USDT)  # for its own coin movements
    if mode == "contract":
        anvil.set_code(DONATION_ADDRESS, anvil.rpc("eth_getCode", world.contracts["HandlerWallet"], "latest"))
    if mode == "safe":
        install_safe(anvil, DONATION_ADDRESS, [OWNER])
    return world


def some_wei(rng: random.Random) -> int:
    return rng.randint(1, 2000) * 10**15


# --- donations --------------------------------------------------------------------------------------------
def direct_eth(w: World, rng: random.Random) -> str:
    wei = some_wei(rng)
    w.anvil.send({"from": rng.choice(DONORS), "to": DONATION_ADDRESS, "value": hex(wei), "gas": hex(100_000)})
    return f"direct_eth({wei})"


def relayed_eth(w: World, rng: random.Random) -> str:
    wei = some_wei(rng)
    w.call(
        w.contracts["EthRelay"], "relay(address)", ["address"], [DONATION_ADDRESS], sender=rng.choice(DONORS), wei=wei
    )
    return f"relayed_eth({wei})"


def several_frames(w: World, rng: random.Random) -> str:
    """Several internal calls in one transaction, some of them dust (below the 8-decimal column)."""
    values = [rng.choice([some_wei(rng), rng.randint(1, 9 * 10**9)]) for _ in range(rng.randint(2, 5))]
    w.call(
        w.contracts["EthForwarder"],
        "forwardMany(address,uint256[])",
        ["address", "uint256[]"],
        [DONATION_ADDRESS, values],
        sender=DONORS[0],
        wei=sum(values),
    )
    return f"several_frames({values})"


def reverted_sub_call(w: World, rng: random.Random) -> str:
    kept, undone = some_wei(rng), some_wei(rng)
    types = ["address", "uint256", "uint256"]
    signature = "forwardWithRevertedPart(address,uint256,uint256)"
    w.call(
        w.contracts["EthForwarder"],
        signature,
        types,
        [DONATION_ADDRESS, kept, undone],
        sender=DONORS[0],
        wei=kept + undone,
    )
    return f"reverted_sub_call(kept={kept}, undone={undone})"


def reverted_transaction(w: World, rng: random.Random) -> str:
    """The innermost call asks for more than the contract holds: the whole transaction reverts."""
    wei = some_wei(rng)
    types = ["address", "uint256", "uint256"]
    w.call(
        w.contracts["DeepCall"],
        "dive(address,uint256,uint256)",
        types,
        [DONATION_ADDRESS, 2 * wei, 3],
        sender=rng.choice(DONORS),
        wei=wei,
    )
    return f"reverted_transaction({wei})"


def deep_call(w: World, rng: random.Random) -> str:
    wei, depth = some_wei(rng), rng.choice([rng.randint(1, 20), rng.randint(100, 200)])
    types = ["address", "uint256", "uint256"]
    w.call(
        w.contracts["DeepCall"],
        "dive(address,uint256,uint256)",
        types,
        [DONATION_ADDRESS, wei, depth],
        sender=rng.choice(DONORS),
        wei=wei,
    )
    return f"deep_call({wei}, depth={depth})"


def dust(w: World, rng: random.Random) -> str:
    wei = rng.randint(1, 9 * 10**9)
    w.anvil.send({"from": rng.choice(DONORS), "to": DONATION_ADDRESS, "value": hex(wei), "gas": hex(100_000)})
    return f"dust({wei})"


def coin(w: World, rng: random.Random) -> str:
    asset, donor, units = (
        rng.choice(["usdt", "usdc"]),
        rng.choice(DONORS),
        rng.randint(1, 500) * USDT // rng.choice([1, 1000]),
    )
    token = w.anvil.coins[asset]
    w.anvil.mint(token, donor, units)
    how = rng.choice(["transfer", "transferFrom", "wallet"])
    if how == "transfer":
        w.anvil.transfer_token(token, donor, DONATION_ADDRESS, units)
    elif how == "transferFrom":
        spender = rng.choice(DONORS)
        w.anvil.approve(token, donor, spender, units)
        w.anvil.transfer_from(token, spender, donor, DONATION_ADDRESS, units)
    else:
        wallet = w.contracts["ForwardingWallet"]
        w.anvil.mint(token, wallet, units)
        w.anvil.wallet_forward(wallet, DEPLOYER, token, DONATION_ADDRESS, units)
    return f"coin({asset}, {units}, {how})"


def poke_then_pay(w: World, rng: random.Random) -> str:
    """A donor's contract makes the address call out (a Safe's fallback handler answers any call), then
    pays it ETH and a coin beside that call, in the same transaction: donations, not the address's own."""
    payer, usdt, wei, units = (
        w.contracts["PokeThenPay"],
        w.anvil.coins["usdt"],
        some_wei(rng),
        rng.randint(1, 90) * USDT,
    )
    w.anvil.mint(usdt, payer, units)
    types = ["address", "address", "uint256"]
    w.call(
        payer,
        "pokeThenPay(address,address,uint256)",
        types,
        [DONATION_ADDRESS, usdt, units],
        sender=rng.choice(DONORS),
        wei=wei,
    )
    return f"poke_then_pay({wei}, usdt {units})"


def burn_without_log(w: World, rng: random.Random) -> str:
    """The address's whole USDC balance burnt with no Transfer log (USDT's destroyBlackFunds)."""
    usdc = w.anvil.coins["usdc"]
    if not w.anvil.token_balance(usdc, DONATION_ADDRESS):  # something to burn: a donation first
        donor = rng.choice(DONORS)
        w.anvil.mint(usdc, donor, 7 * USDT)
        w.anvil.transfer_token(usdc, donor, DONATION_ADDRESS, 7 * USDT)
    held = w.anvil.token_balance(usdc, DONATION_ADDRESS)
    w.call(usdc, "destroyBlackFunds(address)", ["address"], [DONATION_ADDRESS], sender=DEPLOYER)
    return f"burn_without_log(usdc {held})"


def one_block(w: World, rng: random.Random) -> str:
    """Several donations in one block."""
    done = []
    with w.anvil.one_block():
        for _ in range(rng.randint(2, 4)):
            action = rng.choice([direct_eth, relayed_eth, several_frames, dust])
            done.append(action(w, rng))
    return f"one_block({', '.join(done)})"


# --- the address's own money ------------------------------------------------------------------------------
def self_transfer(w: World, rng: random.Random) -> str:
    if rng.random() < 0.5:
        wei = some_wei(rng) // 10
        w.own(DONATION_ADDRESS, wei)
        return f"self_transfer_eth({wei})"
    usdt, units = w.anvil.coins["usdt"], rng.randint(1, 50) * USDT
    w.own(usdt, 0, w.anvil.call_data("transfer(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, units]))
    return f"self_transfer_usdt({units})"


def out_and_back(w: World, rng: random.Random) -> str:
    """ETH wrapped, then (some of it) unwrapped: it comes back in the address's own transaction."""
    weth = w.contracts["WrappedEth"]
    wei = some_wei(rng) // 10
    w.own(weth, wei, w.anvil.call_data("deposit()", [], []))
    held = w.anvil.token_balance(weth, DONATION_ADDRESS)  # what earlier deposits left (a re-org may undo some)
    back = rng.randint(1, held)
    w.own(weth, 0, w.anvil.call_data("withdraw(uint256)", ["uint256"], [back]))
    return f"out_and_back(in={wei}, back={back})"


def pay_out(w: World, rng: random.Random) -> str:
    if rng.random() < 0.5:
        wei = some_wei(rng) // 10
        w.own(PAYEE, wei)
        return f"pay_out_eth({wei})"
    usdt, units = w.anvil.coins["usdt"], rng.randint(1, 50) * USDT
    w.own(usdt, 0, w.anvil.call_data("transfer(address,uint256)", ["address", "uint256"], [PAYEE, units]))
    return f"pay_out_usdt({units})"


def module_pay_out(w: World, rng: random.Random) -> str:
    """A real Safe's module has it pay out (no signature, no nonce: only its event and the traces say so);
    the module is enabled first by a Safe transaction to itself. Any other address: a pay-out."""
    if w.mode != "safe":
        return pay_out(w, rng)
    enabled = "" if w.module else "enabled, "
    if not w.module:
        enable_module(w.anvil, DONATION_ADDRESS, OWNER, HANDLER)
        w.module = True
    wei = some_wei(rng) // 10
    module_execute(w.anvil, DONATION_ADDRESS, HANDLER, PAYEE, wei)
    return f"module_pay_out({enabled}{wei})"


def self_destruct_payment(w: World, rng: random.Random) -> str:
    """A contract's SELFDESTRUCT pays the address: no call frame, no event (a Safe's receive() does not
    run); for every kind of address an unexplained inflow of its block, for the operator."""
    wei = some_wei(rng) // 10
    tx = pay_by_selfdestruct(w.anvil, rng.choice(DONORS), DONATION_ADDRESS, wei, "0x" + "5d" * 20)
    w.self_destructs.append((tx, wei))
    return f"self_destruct_payment({wei})"


def delegate_7702(w: World, rng: random.Random) -> str:
    """The (plain account) donation address signs an EIP-7702 authorization to the Safe stand-in's code; a
    sponsor sends it. From then on its owner has it make its calls."""
    if w.mode != "account" or not w.traces:
        return direct_eth(w, rng)
    authorize_7702(w.anvil, w.contracts["HandlerWallet"])
    w.mode = "delegated"
    return "delegate_7702()"


def delegate_move_clear(w: World, rng: random.Random) -> str:
    """Inside one step (one range): the (plain account) address delegates to a Safe-like wallet, takes ETH in
    by an internal call and its owner sends as much out again through the delegated code in the same block
    (no nonce move), and the delegation is cleared: both edges of the range look plain. An address delegated
    already moves the ETH through its delegate and clears it."""
    if w.mode in ("contract", "safe") or not w.traces:
        return relayed_eth(w, rng)
    anvil, wei = w.anvil, some_wei(rng)
    if w.mode == "account":  # else delegated already (to the Safe stand-in): moved through it, then cleared
        authorize_7702(anvil, w.contracts["SafeLikeWallet"])
    relay = anvil.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    out = anvil.call_data("execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [PAYEE, wei, b""])
    with anvil.one_block():
        anvil.send(
            {"from": rng.choice(DONORS), "to": w.contracts["EthRelay"], "value": hex(wei), "data": relay, "gas": GAS}
        )
        anvil.send({"from": OWNER, "to": DONATION_ADDRESS, "data": out, "gas": GAS})
    authorize_7702(anvil, "0x" + "0" * 40)
    was, w.mode = w.mode, "account"
    return f"delegate_move_clear({wei}{', set' if was == 'account' else ''})"


# --- answers past the cap, and mints ----------------------------------------------------------------------
def call_bomb(w: World, rng: random.Random) -> str:
    """A contract making a thousand empty calls, in the block of a relayed donation (the block's trace is past
    the answer cap: it is traced per transaction, and the donation credited); it pays the address too,
    which no trace short of the cap can show: an unexplained inflow of what it paid."""
    pays = some_wei(rng)
    bomb = w.anvil.call_data("bomb(uint256,address)", ["uint256", "address"], [BOMB_CALLS, DONATION_ADDRESS])
    with w.anvil.one_block():
        w.anvil.send(
            {
                "from": rng.choice(DONORS),
                "to": w.contracts["CallBomb"],
                "value": hex(pays),
                "data": bomb,
                "gas": hex(8_000_000),
            }
        )
        beside = relayed_eth(w, rng)
    return f"call_bomb(pays={pays}, beside {beside})"


def log_bombs(w: World, rng: random.Random) -> str:
    """Coin donations that each carry a large log, in one block: the receipts the check provider is asked
    for in one batch are past the answer cap together, each alone is not."""
    paid = []
    with w.anvil.one_block():
        for bomb in rng.sample(w.log_bombs, rng.randint(3, 4)):
            units = rng.randint(1, 90) * USDT
            types = ["address", "address", "uint256", "uint256"]
            args = [w.anvil.coins["usdt"], DONATION_ADDRESS, units, JUNK]
            w.anvil.send(
                w.anvil.token_tx(bomb, rng.choice(DONORS), "pay(address,address,uint256,uint256)", types, args)
                | {"gas": hex(5_000_000)}
            )
            paid.append(units)
    return f"log_bombs({paid})"


def cctp_mint(w: World, rng: random.Random) -> str:
    """USDC bridged to the address with Circle's CCTP: a donor's (relayed by anyone, v1 or v2 with a fee: a
    donation from the depositor), the address's own deposit (bridged by the address) or its own claim of a
    donor's message (its own money)."""
    v2, units, donor = rng.random() < 0.5, rng.randint(1, 300) * USDT, rng.choice(DONORS)
    fee = rng.randint(0, units // 100) if v2 else 0
    kind = rng.choice(["donor", "donor", "own deposit", "own claim"])
    if kind == "own claim":
        call = receive_call(v2=v2, recipient=DONATION_ADDRESS, amount=units, depositor=donor, fee=fee)
        w.own(call["to"], 0, call["data"])
    else:
        depositor = donor if kind == "donor" else DONATION_ADDRESS
        receive(
            w.anvil, rng.choice(DONORS), v2=v2, recipient=DONATION_ADDRESS, amount=units, depositor=depositor, fee=fee
        )
    return f"cctp_mint({kind}, v{2 if v2 else 1}, {units}, fee {fee})"


def unknown_mint(w: World, rng: random.Random) -> str:
    """A coin minted to the address by no bridge dws can read: an open question for the operator."""
    units = rng.randint(1, 300) * USDT
    w.anvil.mint(w.anvil.coins["usdc"], DONATION_ADDRESS, units)
    return f"unknown_mint({units})"


def idle(w: World, rng: random.Random) -> str:
    blocks = rng.randint(1, 3)
    w.anvil.mine(blocks)
    return f"mine({blocks})"


def reorg(w: World, rng: random.Random) -> str:
    """Replace the last 1 or 2 blocks (never a finalized one: finalized trails the head by 2), sometimes
    with a new donation in them."""
    depth = rng.randint(1, 2)
    again = [
        ({"from": rng.choice(DONORS), "to": DONATION_ADDRESS, "value": hex(some_wei(rng))}, offset)
        for offset in range(depth)
        if rng.random() < 0.5
    ]
    w.anvil.reorg(depth, again)
    if w.mode in ("account", "delegated"):  # an authorization (or a clear) may have been in a replaced block
        w.mode = "account" if w.anvil.rpc("eth_getCode", DONATION_ADDRESS, "latest") == "0x" else "delegated"
    return f"reorg(depth={depth}, re-mined={len(again)})"


Action = Callable[[World, random.Random], str]
# (action, weight)
VOCABULARY: list[tuple[Action, int]] = [
    (direct_eth, 4),
    (relayed_eth, 3),
    (several_frames, 3),
    (reverted_sub_call, 2),
    (reverted_transaction, 1),
    (deep_call, 2),
    (dust, 2),
    (coin, 4),
    (one_block, 2),
    (burn_without_log, 1),
    (poke_then_pay, 2),
    (self_transfer, 2),
    (out_and_back, 2),
    (pay_out, 2),
    (module_pay_out, 1),
    (self_destruct_payment, 1),
    (delegate_7702, 1),
    (delegate_move_clear, 1),
    (call_bomb, 1),
    (log_bombs, 1),
    (cctp_mint, 2),
    (unknown_mint, 1),
    (idle, 1),
    (reorg, 2),
]


def plan(rng: random.Random, steps: int) -> list[Action]:
    """Every action of the vocabulary once, in a random order, then random ones by weight: each seed
    meets the whole vocabulary however short its history."""
    actions, weights = zip(*VOCABULARY, strict=True)
    first = rng.sample(actions, len(actions))
    return first[:steps] + rng.choices(actions, weights, k=max(0, steps - len(first)))
