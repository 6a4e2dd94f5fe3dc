// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A minimal Safe-like contract wallet: one owner key, ERC-1271 signatures checked against the
/// current owner (so changing the owner revokes every signature of the old one), and an `execute`
/// that lets the owner send ETH or call a contract (a token transfer) from the wallet's address.
contract OwnedWallet {
    bytes4 internal constant ERC1271_MAGIC = 0x1626ba7e;
    address public owner;

    constructor(address initialOwner) {
        owner = initialOwner;
    }

    receive() external payable {}

    function setOwner(address newOwner) external {
        require(msg.sender == owner, "owner");
        owner = newOwner;
    }

    function execute(address to, uint256 value, bytes calldata data) external returns (bytes memory) {
        require(msg.sender == owner, "owner");
        (bool ok, bytes memory result) = to.call{value: value}(data);
        require(ok, "call failed");
        return result;
    }

    /// The owner signs the 32-byte hash itself (no prefix): 65 bytes r, s, v.
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        address signer = ecrecover(hash, v, r, s);
        return signer != address(0) && signer == owner ? ERC1271_MAGIC : bytes4(0xffffffff);
    }
}

/// Deploys OwnedWallets at CREATE2 addresses known in advance: a counterfactual wallet can sign
/// (ERC-6492) before it exists.
contract OwnedWalletFactory {
    function deploy(address initialOwner, bytes32 salt) external returns (address wallet) {
        wallet = address(new OwnedWallet{salt: salt}(initialOwner));
    }

    function addressOf(address initialOwner, bytes32 salt) external view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(OwnedWallet).creationCode, abi.encode(initialOwner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, codeHash)))));
    }
}
