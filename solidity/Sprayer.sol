// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

interface IERC20Transfer {
    function transfer(address to, uint256 value) external returns (bool);
}

/// Sends `count` transfers of `value` of a token it holds to `to` in one transaction: each is a
/// `Transfer` log of its own. The flood an attacker can aim at a public deposit address, cheaply.
contract Sprayer {
    function spray(IERC20Transfer token, address to, uint256 value, uint256 count) external {
        for (uint256 i = 0; i < count; i++) require(token.transfer(to, value), "transfer failed");
    }
}
