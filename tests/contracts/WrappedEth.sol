// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// WETH's deposit and withdraw, nothing else: `withdraw` pays the caller back by an internal call, so ETH
/// the caller itself wrapped arrives in a call frame from this contract.
contract WrappedEth {
    mapping(address => uint256) public balanceOf;

    function deposit() external payable {
        balanceOf[msg.sender] += msg.value;
    }

    function withdraw(uint256 wad) external {
        require(balanceOf[msg.sender] >= wad, "balance");
        balanceOf[msg.sender] -= wad;
        (bool ok, ) = payable(msg.sender).call{value: wad}("");
        require(ok, "send");
    }
}
