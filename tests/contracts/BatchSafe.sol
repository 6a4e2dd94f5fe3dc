// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A Safe stand-in that executes a Safe Transaction Builder batch in one transaction, as a Safe does through
/// MultiSendCallOnly: the owner signs, the wallet makes each call of the batch itself. `transactions` is
/// MultiSend's packed encoding, one entry per call: operation (uint8, 0 = call; the only one taken here),
/// to (20 bytes), value (uint256), data length (uint256), data. The owner is immutable (in the code), so the
/// code can be installed at the donation address (anvil_setCode).
contract BatchSafe {
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    function multiSend(bytes memory transactions) external {
        require(msg.sender == owner, "owner");
        assembly {
            let end := add(add(transactions, 0x20), mload(transactions))
            for { let at := add(transactions, 0x20) } lt(at, end) {} {
                let operation := shr(0xf8, mload(at))
                let to := shr(0x60, mload(add(at, 0x01)))
                let value := mload(add(at, 0x15))
                let size := mload(add(at, 0x35))
                if operation { revert(0, 0) }
                if iszero(call(gas(), to, value, add(at, 0x55), size, 0, 0)) { revert(0, 0) }
                at := add(at, add(0x55, size))
            }
        }
    }
}
