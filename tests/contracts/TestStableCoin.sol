// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A USDT/USDC-like ERC-20 for tests: 6 decimals, anyone may mint.
contract TestStableCoin {
    string public name;
    string public symbol;
    uint8 public constant decimals = 6;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event DestroyedBlackFunds(address blackListedUser, uint256 balance);

    constructor(string memory name_, string memory symbol_) {
        name = name_;
        symbol = symbol_;
    }

    function mint(address to, uint256 value) external {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    /// USDT's destroyBlackFunds: a holder's whole balance is burnt with no Transfer log (only its own
    /// event). Anyone may call it here, as anyone may mint.
    function destroyBlackFunds(address holder) external {
        uint256 funds = balanceOf[holder];
        balanceOf[holder] = 0;
        totalSupply -= funds;
        emit DestroyedBlackFunds(holder, funds);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        require(allowance[from][msg.sender] >= value, "allowance");
        allowance[from][msg.sender] -= value;
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) private {
        require(balanceOf[from] >= value, "balance");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
