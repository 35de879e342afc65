//! # nicgen-driver: the thin host driver of the nicgen NIC
//!
//! The driver sees the hardware only through three traits and the generated register map;
//! everything above builds on the layer below:
//!
//! | layer | module | what it knows |
//! |---|---|---|
//! | hardware | [`hw`] | [`RegisterSpace`](hw::RegisterSpace) (BAR 0), [`DmaMemory`](hw::DmaMemory), [`Interrupts`](hw::Interrupts) (vectors, `relax`, device time) |
//! | map | [`regs`] | BAR offsets, register fields, descriptor layouts, constants — generated from `hdl/src/host/regmap.rs`, never edited |
//! | descriptors | [`desc`], [`lso`], [`encap`] | mlx5 send/receive WQEs, CQEs, EQEs as typed values ↔ bytes, every field through [`regs::desc`]; an LSO super-frame's headers and software-parser fields; encapsulation contexts as `encap.CTX` words |
//! | rings | [`ring`] | 16-bit producer/consumer counters, WQEBB slots and wrap, the owner-bit rule, doorbell records and payloads |
//! | device | [`device`] | [`Device`](device::Device): identification, loopback, memory regions, queue commands, RSS, counters, time |
//! | netdev | [`netdev`] | [`NetDev`](netdev::NetDev): queue pairs that send and receive frames with offloads, poll, wait, recover |
//!
//! Backends implement the three traits: the Verilator-simulated NIC with a simulated host
//! (`testbench/host`, in process) and a real PCIe function through VFIO (`vfio`, Linux).
//! Errors are typed per layer ([`desc::DescError`], [`device::DeviceError`],
//! [`netdev::Error`]); nothing on a device path unwraps.
//!
//! Invariant: nothing here knows whether the device is simulated; tests and the CLI run this
//! same code against the simulation.
//!
//! ```no_run
//! use nicgen_driver::device::Device;
//! use nicgen_driver::hw::Backend;
//! use nicgen_driver::netdev::{Completion, Error, NetDev, NetDevConfig, TxOffload};
//!
//! /// Send one frame through the MAC-side loopback and get it back.
//! fn loopback<B: Backend>(backend: B, frame: &[u8]) -> Result<Vec<u8>, Error> {
//!     let mut dev = Device::open(backend)?;
//!     println!("{}", dev.info());
//!     dev.set_loopback(true)?;
//!     let mut nd = NetDev::new(dev, NetDevConfig::default())?;
//!     let off = TxOffload { csum_l3: true, csum_l4: true, ..TxOffload::default() };
//!     nd.send(0, frame, off)?;
//!     loop {
//!         nd.wait(1, 1_000_000)?;
//!         for c in nd.poll(0)? {
//!             if let Completion::Rx(rx) = c {
//!                 return Ok(rx.data);
//!             }
//!         }
//!     }
//! }
//! ```

/// An enum over the named values of one numbered field, with `Other` for the rest:
/// `code()` and `from_code()` convert, and `from_code(x.code()) == x` for every named value.
macro_rules! coded_enum {
    ($(#[$m:meta])* $name:ident: $ty:ty {
        $($(#[$vm:meta])* $var:ident = $code:expr,)*
    }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $var,)*
            /// A value the map does not name.
            Other($ty),
        }

        impl $name {
            /// The numeric value.
            pub fn code(self) -> $ty {
                match self {
                    $($name::$var => $code as $ty,)*
                    $name::Other(c) => c,
                }
            }

            /// The value named by `code`, or `Other(code)`.
            pub fn from_code(code: $ty) -> Self {
                $(if code == $code as $ty {
                    return $name::$var;
                })*
                $name::Other(code)
            }
        }
    };
}

pub mod desc;
pub mod device;
pub mod encap;
pub mod hw;
pub mod lso;
pub mod netdev;
pub mod ring;
#[cfg(target_os = "linux")]
pub mod vfio;
/// The register and descriptor map (generated; see `docs/REGISTERS.md`).
#[rustfmt::skip]
pub mod regs;
#[cfg(test)]
mod testdev;
