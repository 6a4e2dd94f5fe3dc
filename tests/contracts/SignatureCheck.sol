// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Never deployed: its creation code runs inside an eth_call (no `to`) and returns one byte, 0x01 when
/// `signer` accepts `signature` for `hash` by ERC-1271, else 0x00. When a factory is given (an ERC-6492
/// counterfactual wallet), the wallet is first deployed with the factory calldata if it has no code,
/// or the factory is called to prepare it when the deployed wallet refuses; all of it vanishes with
/// the eth_call. Low-level calls only, so a misbehaving wallet gives 0x00, never a revert.
/// Its bytecode is copied into affiliates/contract_signatures.py (a test keeps the two equal).
contract SignatureCheck {
    bytes4 internal constant ERC1271_MAGIC = 0x1626ba7e;

    constructor(address signer, bytes32 hash, bytes memory signature, address factory, bytes memory factoryCalldata) {
        bool ok = signer.code.length > 0 && _accepts(signer, hash, signature);
        if (!ok && factory != address(0)) {
            (bool called, ) = factory.call(factoryCalldata);
            ok = called && signer.code.length > 0 && _accepts(signer, hash, signature);
        }
        assembly {
            mstore(0, ok)
            return(31, 1)
        }
    }

    function _accepts(address signer, bytes32 hash, bytes memory signature) internal view returns (bool) {
        (bool success, bytes memory answer) = signer.staticcall(
            abi.encodeWithSelector(ERC1271_MAGIC, hash, signature)
        );
        return success && answer.length >= 32 && bytes4(abi.decode(answer, (bytes32))) == ERC1271_MAGIC;
    }
}
