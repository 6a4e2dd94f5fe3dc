// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A Safe stand-in with a fallback handler: a call it has no function for is passed on to the handler by a
/// CALL from the wallet's own address, as a Safe's FallbackManager does. Anyone can make it call out so.
contract HandlerWallet {
    address public immutable owner;
    address public immutable handler;

    constructor(address owner_, address handler_) {
        owner = owner_;
        handler = handler_;
    }

    receive() external payable {}

    fallback() external {
        (bool ok, ) = handler.call(msg.data);
        require(ok, "handler");
    }

    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == owner, "owner");
        (bool ok, bytes memory out) = to.call{value: value}(data);
        require(ok, "call");
        return out;
    }
}

interface ICoin {
    function transfer(address to, uint256 amount) external returns (bool);
}

/// A donor's contract that first calls the recipient (any call: a Safe's handler answers it) and then, in
/// the same transaction, pays it ETH and a coin it holds.
contract PokeThenPay {
    function pokeThenPay(address payable to, address coin, uint256 coinAmount) external payable {
        (bool ok, ) = to.call(hex"deadbeef");
        require(ok, "poke");
        (ok, ) = to.call{value: msg.value}("");
        require(ok, "pay");
        if (coin != address(0)) require(ICoin(coin).transfer(to, coinAmount), "coin");
    }
}
