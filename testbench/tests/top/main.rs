//! The tests of `hdl/src/top.rs`, the Ethernet core `nic_core` (the whole NIC, `hdl/src/nic.rs`,
//! is tested by the system test `testbench/system/loopback.rs`).

mod nic_core;
