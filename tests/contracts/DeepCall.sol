// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Recurses through itself before paying: the payment's call frame sits as deep in the call tree as the
/// caller asks (a trace path of ~`depth` elements), which anyone can send for the price of gas.
contract DeepCall {
    receive() external payable {}

    /// Calls itself `depth` times; the innermost call sends `value` wei to `to`.
    function dive(address payable to, uint256 value, uint256 depth) external payable {
        if (depth == 0) {
            (bool ok, ) = to.call{value: value}("");
            require(ok, "send");
            return;
        }
        this.dive(to, value, depth - 1);
    }

    /// Sends `value` wei to `to` first (a shallow frame), then recurses `depth` times without value: a
    /// call tree whose trace nests as deep as the gas allows.
    function payThenDive(address payable to, uint256 value, uint256 depth) external payable {
        (bool ok, ) = to.call{value: value}("");
        require(ok, "send");
        this.dive(to, 0, depth);
    }
}
