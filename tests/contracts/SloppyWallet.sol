// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A contract whose every call answers with the ERC-1271 magic value followed by something else: the
/// answer starts with 0x1626ba7e but is not exactly the 32-byte word a yes must be.
/// mode 0: the magic word, then another word (64 bytes); mode 1: one word, the magic then non-zero bytes.
contract SloppyWallet {
    uint8 public immutable mode;

    constructor(uint8 initialMode) {
        mode = initialMode;
    }

    fallback(bytes calldata) external returns (bytes memory) {
        if (mode == 0) return abi.encode(bytes4(0x1626ba7e), uint256(1));
        return abi.encodePacked(bytes4(0x1626ba7e), bytes28(uint224(1)));
    }
}
