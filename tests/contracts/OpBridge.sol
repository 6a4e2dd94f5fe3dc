// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

// Stand-ins for the OP-stack predeploys an ETH deposit made through L1StandardBridge runs through on L2:
// the deposit transaction calls L2CrossDomainMessenger (0x4200...0007) `relayMessage`, which calls
// L2StandardBridge (0x4200...0010) `finalizeBridgeETH(_from, _to, _amount, _extraData)` (older deposits:
// `finalizeDeposit` with the ETH placeholder token), which pays `_to`. `anvil --network optimism` has no
// code at the predeploys: the tests copy these contracts' runtime code there (tests/op_stack.py), each
// behind a `PredeployProxy` as on Base and OP Mainnet, so a trace shows the proxies' DELEGATECALL frames
// between the relayed call and the payment exactly as op-geth and op-reth show them.

address constant L2_CROSS_DOMAIN_MESSENGER = 0x4200000000000000000000000000000000000007;
address constant LEGACY_ERC20_ETH = 0xDeadDeAddeAddEAddeadDEaDDEAdDeaDDeAD0000;

/// The predeploys' proxy: runs its implementation's code by DELEGATECALL, with the calldata it was given.
contract PredeployProxy {
    address private immutable implementation;

    constructor(address implementation_) {
        implementation = implementation_;
    }

    fallback() external payable {
        address impl = implementation;
        assembly {
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), impl, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            if iszero(ok) {
                revert(0, returndatasize())
            }
            return(0, returndatasize())
        }
    }
}

/// L2CrossDomainMessenger's part: calls the message's target with its value and calldata.
contract MessengerStandIn {
    function relayMessage(
        uint256,
        address,
        address _target,
        uint256 _value,
        uint256,
        bytes calldata _message
    ) external payable {
        require(msg.value == _value, "value");
        (bool ok, ) = _target.call{value: _value}(_message);
        require(ok, "relayed call failed");
    }
}

/// L2StandardBridge's part: the two ways a relayed ETH deposit is finalized, and (not a deposit) a payment
/// any caller can make it send, for the frame from the predeploy that no relayed deposit explains.
contract StandardBridgeStandIn {
    function finalizeBridgeETH(address, address _to, uint256 _amount, bytes calldata) public payable {
        require(msg.sender == L2_CROSS_DOMAIN_MESSENGER, "only the messenger");
        require(msg.value == _amount, "amount");
        (bool ok, ) = _to.call{value: _amount}("");
        require(ok, "transfer");
    }

    function finalizeDeposit(
        address _l1Token,
        address _l2Token,
        address _from,
        address _to,
        uint256 _amount,
        bytes calldata _extraData
    ) external payable {
        require(_l1Token == address(0) && _l2Token == LEGACY_ERC20_ETH, "ETH only");
        finalizeBridgeETH(_from, _to, _amount, _extraData);
    }

    function payOut(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "transfer");
    }
}
