// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A minimal smart-contract wallet that holds ETH (Safe/ERC-4337 stand-in): its owner makes it send ETH,
/// so the donation arrives in an internal call and no transaction has the donation address as `to`.
contract EthForwarder {
    address public immutable owner;

    constructor() payable {
        owner = msg.sender;
    }

    receive() external payable {}

    modifier onlyOwner() {
        require(msg.sender == owner, "owner");
        _;
    }

    /// One internal call moving `value` wei to `to`.
    function forward(address payable to, uint256 value) external payable onlyOwner {
        _send(to, value);
    }

    /// Several internal calls in one transaction, one per entry of `values`.
    function forwardMany(address payable to, uint256[] calldata values) external payable onlyOwner {
        for (uint256 i = 0; i < values.length; i++) {
            _send(to, values[i]);
        }
    }

    /// Sends `kept` to `to`, then calls itself to send `undone` and revert; the revert is caught, so the
    /// transaction succeeds, `kept` arrives and `undone` does not (its frame sits under a reverted one).
    function forwardWithRevertedPart(address payable to, uint256 kept, uint256 undone) external payable onlyOwner {
        _send(to, kept);
        try this.sendThenRevert(to, undone) {
            revert("the inner call was meant to revert");
        } catch {}
    }

    /// Calls the SHA-256 precompile before sending: geth's callTracer lists that call, Parity-style traces
    /// do not, and the send must get the same trace address in both.
    function forwardAfterPrecompile(address payable to, uint256 value) external payable onlyOwner returns (bytes32) {
        bytes32 digest = sha256(abi.encodePacked(to, value));
        _send(to, value);
        return digest;
    }

    function sendThenRevert(address payable to, uint256 value) external {
        require(msg.sender == address(this), "self only");
        _send(to, value);
        revert("undone");
    }

    function _send(address payable to, uint256 value) private {
        (bool ok, ) = to.call{value: value}("");
        require(ok, "send");
    }
}
