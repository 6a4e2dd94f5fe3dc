// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Makes `calls` empty calls to an account without code (each a frame of the call trace, ~170 bytes of
/// a callTracer answer), then pays on what it was sent: a block trace too large for the crawlers' answer
/// cap that anyone can make for the price of its gas.
contract CallBomb {
    function bomb(uint256 calls, address payable pay) external payable {
        address empty = address(0xDeaD00000000000000000000000000000000BEEf);
        for (uint256 i = 0; i < calls; i++) {
            (bool ok, ) = empty.call("");
            require(ok, "call");
        }
        if (msg.value > 0) {
            (bool paid, ) = pay.call{value: msg.value}("");
            require(paid, "pay");
        }
    }
}
