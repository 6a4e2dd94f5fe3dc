// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A Safe stand-in for a donation address with code: it takes ETH, and its owner makes it pay out by an
/// internal call, as a Safe's execTransaction does (the owner signs the transaction, the wallet calls).
/// The owner is immutable (in the code, not in storage), so the code can be installed at any address
/// (anvil_setCode) or be the target of an EIP-7702 delegation.
contract SafeLikeWallet {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == owner, "owner");
        (bool ok, bytes memory out) = to.call{value: value}(data);
        require(ok, "call");
        return out;
    }
}
