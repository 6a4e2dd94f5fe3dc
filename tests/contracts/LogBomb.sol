// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

interface ICoin {
    function transfer(address to, uint256 value) external returns (bool);
}

/// Pays a coin it holds and emits a log of `junk` bytes in the same transaction: a receipt as large as
/// the sender likes (what a receipts batch of several such donations adds up to is past the answer cap,
/// each receipt alone is not).
contract LogBomb {
    event Junk(bytes data);

    function pay(address coin, address to, uint256 value, uint256 junk) external {
        require(ICoin(coin).transfer(to, value), "transfer");
        emit Junk(new bytes(junk));
    }
}
