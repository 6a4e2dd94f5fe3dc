// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Pays part of what it holds by a call and the rest by SELFDESTRUCT, in one transaction: the call is a
/// donation the traces show, the self-destruct's balance reaches the beneficiary by no call frame.
contract SplitPayer {
    receive() external payable {}

    function payThenDestroy(address payable to, uint256 byCall) external {
        (bool ok, ) = to.call{value: byCall}("");
        require(ok, "send");
        selfdestruct(to);
    }
}
