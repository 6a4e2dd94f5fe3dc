// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

interface IERC20Transfer {
    function transfer(address to, uint256 value) external returns (bool);
}

/// A minimal smart-contract wallet (Safe/ERC-4337 stand-in): its owner makes it move ERC-20 tokens it
/// holds, so the donation arrives by an internal call and only the Transfer log shows it.
contract ForwardingWallet {
    address public immutable owner;

    constructor() {
        owner = msg.sender;
    }

    function forward(address token, address to, uint256 value) external {
        require(msg.sender == owner, "owner");
        require(IERC20Transfer(token).transfer(to, value), "transfer");
    }
}
