//! The driver's view of the hardware: three traits a backend implements.
//!
//! - [`RegisterSpace`]: 32-bit reads and writes of BAR 0 (little-endian register values; the
//!   mlx5 doorbell payloads are written as raw bytes in memory order, see `write64`);
//! - [`DmaMemory`]: memory the device can read and write (bus addresses), allocated by the
//!   driver for rings, doorbell records and buffers;
//! - [`Interrupts`]: the device's interrupt vectors (one per event queue), waiting with a
//!   timeout, and [`Interrupts::relax`], the spin-loop hint a polling loop calls (on a
//!   simulated device it lets simulated time pass).
//!
//! Time is in nanoseconds of device time: wall time on a board, simulated cycles × the preset's
//! clock period in simulation.

use std::fmt;

/// BAR 0 of the device.
pub trait RegisterSpace {
    /// Read the 32-bit register at byte offset `offset` (4-byte aligned).
    fn read32(&mut self, offset: u32) -> u32;
    /// Write the 32-bit register at byte offset `offset` (4-byte aligned).
    fn write32(&mut self, offset: u32, value: u32);
    /// A 64-bit doorbell write of 8 bytes in memory order (`bytes[0]` at `offset`), as mlx5's
    /// `__raw_writeq`: on a 32-bit register bus, the dword at `offset` first, then the one at
    /// `offset + 4` (the device acts on the second).
    fn write64(&mut self, offset: u32, bytes: [u8; 8]) {
        self.write32(offset, u32::from_le_bytes(bytes[0..4].try_into().unwrap()));
        self.write32(
            offset + 4,
            u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
        );
    }
}

/// A block of DMA-visible memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DmaRegion {
    /// Bus address of the first byte (what the device is given).
    pub addr: u64,
    /// Length in bytes.
    pub len: usize,
}

impl DmaRegion {
    /// Whether `[addr, addr + len)` lies inside this region.
    pub fn contains(&self, addr: u64, len: usize) -> bool {
        addr >= self.addr
            && addr
                .checked_add(len as u64)
                .is_some_and(|end| end <= self.addr + self.len as u64)
    }
}

/// Why DMA memory could not be had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DmaError {
    /// No room left for `len` bytes.
    OutOfMemory { len: usize },
    /// The alignment is not a power of two.
    BadAlignment { align: usize },
    /// The backend refused the mapping (VFIO: the ioctl's error).
    Map(String),
}

impl fmt::Display for DmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmaError::OutOfMemory { len } => write!(f, "no DMA memory left for {len} bytes"),
            DmaError::BadAlignment { align } => {
                write!(f, "alignment {align} is not a power of two")
            }
            DmaError::Map(e) => write!(f, "DMA mapping failed: {e}"),
        }
    }
}

impl std::error::Error for DmaError {}

/// Memory the device reaches by DMA. Coherent: what the driver writes is visible to the device
/// after [`DmaMemory::wmb`], and what the device wrote is visible to `read`.
pub trait DmaMemory {
    /// Allocate `len` zeroed bytes aligned to `align` (a power of two).
    fn alloc(&mut self, len: usize, align: usize) -> Result<DmaRegion, DmaError>;
    /// Give a region back.
    fn free(&mut self, region: DmaRegion);
    /// Copy device-visible memory at bus address `addr` into `buf`.
    fn read(&mut self, addr: u64, buf: &mut [u8]);
    /// Copy `data` to device-visible memory at bus address `addr`.
    fn write(&mut self, addr: u64, data: &[u8]);
    /// Write barrier: earlier writes to DMA memory are visible to the device before later
    /// register writes (`dma_wmb` / `wmb`).
    fn wmb(&mut self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// The device's interrupt vectors.
pub trait Interrupts {
    /// How many vectors the device has.
    fn vectors(&self) -> usize;
    /// Wait up to `timeout_ns` for any vector in `mask` (bit v = vector v); returns the vectors
    /// that fired (their pending state cleared), or 0 on timeout.
    fn wait(&mut self, mask: u64, timeout_ns: u64) -> u64;
    /// Spin-loop hint for polling loops: on hardware a CPU pause; in simulation it advances
    /// simulated time (a few cycles), so polling a completion queue makes progress.
    fn relax(&mut self) {
        std::hint::spin_loop();
    }
    /// Device time now, nanoseconds (monotonic).
    fn now_ns(&mut self) -> u64;
}

/// Everything the driver needs from a backend.
pub trait Backend: RegisterSpace + DmaMemory + Interrupts {}

impl<T: RegisterSpace + DmaMemory + Interrupts> Backend for T {}
