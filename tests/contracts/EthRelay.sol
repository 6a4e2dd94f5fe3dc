// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Pays on the ETH it receives in the same call: the recipient gets it by an internal call, so no
/// transaction has the recipient as `to` (the balance proof's test of internal ETH).
contract EthRelay {
    function relay(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "relay");
    }
}
