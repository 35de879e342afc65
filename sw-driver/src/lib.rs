//! # nicgen-driver: the thin host driver of the nicgen NIC
//!
//! Written against three traits ([`hw`]): the device's register space (BAR 0), DMA-visible host
//! memory, and interrupts. Backends: the Verilator-simulated NIC with a simulated host
//! (`testbench/host`, in process) and a real PCIe function through VFIO (`vfio`, Linux).
//!
//! Invariant: nothing here knows whether the device is simulated; tests and the CLI run this
//! same code against the simulation.

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
pub mod hw;
pub mod netdev;
pub mod ring;
#[cfg(target_os = "linux")]
pub mod vfio;
/// The register and descriptor map (generated; see `docs/REGISTERS.md`).
#[rustfmt::skip]
pub mod regs;
#[cfg(test)]
mod testdev;
