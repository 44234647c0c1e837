// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Forwards the value it is sent to `to` by an internal call, as a contract wallet (a Safe, an
/// ERC-4337 account) pays: the transfer to `to` is no top-level transaction, only a trace shows it.
contract Forwarder {
    function forward(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "forward failed");
    }
}
