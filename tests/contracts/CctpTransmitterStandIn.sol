// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

interface IMintableCoin {
    function mint(address to, uint256 value) external;
}

// A stand-in for Circle's CCTP MessageTransmitter (v1 and v2) and the TokenMessenger behind it, at the same
// `receiveMessage(bytes message, bytes attestation)` interface and the same message layout, for tests: it
// checks no attestation, mints the local coin it is given (slot 0, `localCoin`) to the burn message's
// mintRecipient (the amount less the fee executed, for v2), and emits the version's MessageReceived event.
// Tests install its code at Circle's own transmitter addresses (anvil_setCode), as a node forked from
// mainnet would have it.
//
// Message (v1, version 0): version uint32 at 0, sourceDomain uint32 at 4, destinationDomain uint32 at 8,
// nonce uint64 at 12, sender bytes32 at 20, recipient bytes32 at 52, destinationCaller bytes32 at 84, body at 116.
// Message (v2, version 1): version at 0, sourceDomain at 4, destinationDomain at 8, nonce bytes32 at 12,
// sender at 44, recipient at 76, destinationCaller at 108, minFinalityThreshold uint32 at 140,
// finalityThresholdExecuted uint32 at 144, body at 148.
// Burn message body: version uint32 at 0, burnToken bytes32 at 4, mintRecipient bytes32 at 36, amount uint256
// at 68, messageSender bytes32 at 100; v2 adds maxFee at 132, feeExecuted at 164, expirationBlock at 196, hookData at 228.
contract CctpTransmitterStandIn {
    address public localCoin;

    event MessageReceived(
        address indexed caller,
        uint32 sourceDomain,
        uint64 indexed nonce,
        bytes32 sender,
        bytes messageBody
    );
    event MessageReceived(
        address indexed caller,
        uint32 sourceDomain,
        bytes32 indexed nonce,
        bytes32 sender,
        uint32 indexed finalityThresholdExecuted,
        bytes messageBody
    );

    function setLocalCoin(address coin) external {
        localCoin = coin;
    }

    function receiveMessage(bytes calldata message, bytes calldata) external returns (bool) {
        bool v1 = uint32(bytes4(message[0:4])) == 0;
        bytes calldata body = v1 ? message[116:] : message[148:];
        _mint(body, v1);
        if (v1) {
            _receivedV1(message, body);
        } else {
            _receivedV2(message, body);
        }
        return true;
    }

    function _mint(bytes calldata body, bool v1) private {
        address recipient = address(uint160(uint256(bytes32(body[36:68]))));
        uint256 fee = v1 ? 0 : uint256(bytes32(body[164:196]));
        IMintableCoin(localCoin).mint(recipient, uint256(bytes32(body[68:100])) - fee);
    }

    function _receivedV1(bytes calldata message, bytes calldata body) private {
        emit MessageReceived(
            msg.sender,
            uint32(bytes4(message[4:8])),
            uint64(bytes8(message[12:20])),
            bytes32(message[20:52]),
            body
        );
    }

    function _receivedV2(bytes calldata message, bytes calldata body) private {
        emit MessageReceived(
            msg.sender,
            uint32(bytes4(message[4:8])),
            bytes32(message[12:44]),
            bytes32(message[44:76]),
            uint32(bytes4(message[144:148])),
            body
        );
    }
}
