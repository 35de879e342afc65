//! Host memory: sparse and byte-addressed, with an allocator of bus addresses.
//!
//! The address space is `[base, base + size)` of [`MemoryConfig`]. Memory exists only inside
//! allocations: [`HostMemory::read`] and [`HostMemory::write`] of a byte outside every
//! allocated region fail, which is how the DMA service tells the NIC's stray accesses apart
//! (reads answer with `tuser.err`, writes are dropped and counted). Bytes live in 4 KiB pages
//! created on first write, so a large address space costs only what is touched.
//!
//! The allocator is first-fit over the free holes (coalesced on free); regions are exactly as
//! long as asked, aligned as asked, never overlap, and read as zero when handed out (a freed
//! region is zeroed, and nothing outside allocations is ever written).

use nicgen_driver::hw::DmaRegion;
use std::collections::{BTreeMap, HashMap};

/// Page size of the sparse store (and the PCIe 4 KiB boundary, by coincidence only).
pub const PAGE: usize = 4096;

/// Where the host's DMA address space lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryConfig {
    /// First bus address handed out. The default, 4 GiB, makes every address need more than
    /// 32 bits, so a NIC that truncates addresses reads or writes outside memory and is caught.
    pub base: u64,
    /// Size of the address space in bytes: the most that can be allocated at once.
    pub size: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            base: 1 << 32,
            size: 256 << 20,
        }
    }
}

/// Why a memory operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// An allocation of zero bytes.
    #[error("cannot allocate 0 bytes")]
    ZeroLength,
    /// The alignment is not a power of two.
    #[error("alignment {align} is not a power of two")]
    BadAlignment {
        /// The alignment asked for.
        align: usize,
    },
    /// No hole is large enough.
    #[error("no room for {len} bytes aligned to {align} ({free} of {size} bytes free)")]
    OutOfMemory {
        /// Bytes asked for.
        len: usize,
        /// Alignment asked for.
        align: usize,
        /// Free bytes in total.
        free: u64,
        /// Size of the address space.
        size: u64,
    },
    /// Some byte of the range lies outside every allocated region.
    #[error("{len} bytes at {addr:#x} are not all inside allocated memory")]
    Unmapped {
        /// First address.
        addr: u64,
        /// Length in bytes.
        len: usize,
    },
    /// `free` of something that is not exactly one live allocation (a double free, or a
    /// region that was never handed out).
    #[error("{len} bytes at {addr:#x} are not an allocation (double free, or never allocated)")]
    NotAllocated {
        /// First address.
        addr: u64,
        /// Length in bytes.
        len: usize,
    },
    /// The configuration is unusable.
    #[error("memory config: {0}")]
    Config(String),
}

/// The host's DMA-visible memory. See the module docs.
#[derive(Debug)]
pub struct HostMemory {
    config: MemoryConfig,
    pages: HashMap<u64, Box<[u8; PAGE]>>,
    /// Live allocations: start -> length.
    allocated: BTreeMap<u64, u64>,
    /// Free holes: start -> length (never adjacent to each other).
    holes: BTreeMap<u64, u64>,
    allocated_bytes: u64,
}

impl HostMemory {
    /// An empty memory over `config`'s address space.
    pub fn new(config: MemoryConfig) -> Result<HostMemory, MemError> {
        if config.size == 0 {
            return Err(MemError::Config("size must be at least 1 byte".into()));
        }
        if config.base.checked_add(config.size).is_none() {
            return Err(MemError::Config(format!(
                "base {:#x} + size {:#x} overflows 64 bits",
                config.base, config.size
            )));
        }
        Ok(HostMemory {
            config,
            pages: HashMap::new(),
            allocated: BTreeMap::new(),
            holes: BTreeMap::from([(config.base, config.size)]),
            allocated_bytes: 0,
        })
    }

    /// The address space.
    pub fn config(&self) -> MemoryConfig {
        self.config
    }

    /// Allocates `len` zeroed bytes at an address that is a multiple of `align` (a power of
    /// two), first fit.
    pub fn alloc(&mut self, len: usize, align: usize) -> Result<DmaRegion, MemError> {
        if len == 0 {
            return Err(MemError::ZeroLength);
        }
        if !align.is_power_of_two() {
            return Err(MemError::BadAlignment { align });
        }
        let (len64, align64) = (len as u64, align as u64);
        let fit = self.holes.iter().find_map(|(&start, &hole)| {
            let addr = start.checked_next_multiple_of(align64)?;
            let end = addr.checked_add(len64)?;
            (end <= start + hole).then_some((start, hole, addr))
        });
        let Some((start, hole, addr)) = fit else {
            return Err(MemError::OutOfMemory {
                len,
                align,
                free: self.config.size - self.allocated_bytes,
                size: self.config.size,
            });
        };
        self.holes.remove(&start);
        if addr > start {
            self.holes.insert(start, addr - start);
        }
        let (end, hole_end) = (addr + len64, start + hole);
        if hole_end > end {
            self.holes.insert(end, hole_end - end);
        }
        self.allocated.insert(addr, len64);
        self.allocated_bytes += len64;
        Ok(DmaRegion { addr, len })
    }

    /// Gives `region` back (it must be exactly a live allocation); its bytes become zero and
    /// unreachable.
    pub fn free(&mut self, region: DmaRegion) -> Result<(), MemError> {
        let len = region.len as u64;
        if self.allocated.get(&region.addr) != Some(&len) {
            return Err(MemError::NotAllocated {
                addr: region.addr,
                len: region.len,
            });
        }
        self.allocated.remove(&region.addr);
        self.allocated_bytes -= len;
        self.zero(region.addr, region.len);
        let (mut start, mut end) = (region.addr, region.addr + len);
        if let Some((&prev, &plen)) = self.holes.range(..start).next_back() {
            if prev + plen == start {
                self.holes.remove(&prev);
                start = prev;
            }
        }
        if let Some(next_len) = self.holes.remove(&end) {
            end += next_len;
        }
        self.holes.insert(start, end - start);
        Ok(())
    }

    /// Whether every byte of `[addr, addr + len)` lies in some allocated region (adjacent
    /// regions count together, as pages mapped side by side in an IOMMU do).
    pub fn is_mapped(&self, addr: u64, len: usize) -> bool {
        let Some(end) = addr.checked_add(len as u64) else {
            return false;
        };
        let mut pos = addr;
        while pos < end {
            match self.allocated.range(..=pos).next_back() {
                Some((&start, &rlen)) if start + rlen > pos => pos = start + rlen,
                _ => return false,
            }
        }
        true
    }

    /// Copies the bytes at `addr` into `buf`; fails, copying nothing, unless all are mapped.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        self.check_mapped(addr, buf.len())?;
        for (page, off, range) in pieces(addr, buf.len()) {
            let dst = &mut buf[range];
            match self.pages.get(&page) {
                Some(p) => dst.copy_from_slice(&p[off..off + dst.len()]),
                None => dst.fill(0),
            }
        }
        Ok(())
    }

    /// Copies `data` to `addr`; fails, writing nothing, unless all of it is mapped.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.check_mapped(addr, data.len())?;
        for (page, off, range) in pieces(addr, data.len()) {
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| Box::new([0; PAGE]));
            p[off..off + range.len()].copy_from_slice(&data[range]);
        }
        Ok(())
    }

    /// Bytes allocated now.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes
    }

    /// The live allocations, by address.
    pub fn regions(&self) -> impl Iterator<Item = DmaRegion> + '_ {
        self.allocated.iter().map(|(&addr, &len)| DmaRegion {
            addr,
            len: len as usize,
        })
    }

    /// Pages that hold data (the sparse store's footprint).
    pub fn resident_pages(&self) -> usize {
        self.pages.len()
    }

    fn check_mapped(&self, addr: u64, len: usize) -> Result<(), MemError> {
        if self.is_mapped(addr, len) {
            Ok(())
        } else {
            Err(MemError::Unmapped { addr, len })
        }
    }

    /// Zeroes `[addr, addr + len)`: whole pages are dropped, partial ones cleared.
    fn zero(&mut self, addr: u64, len: usize) {
        for (page, off, range) in pieces(addr, len) {
            if range.len() == PAGE {
                self.pages.remove(&page);
            } else if let Some(p) = self.pages.get_mut(&page) {
                p[off..off + range.len()].fill(0);
            }
        }
    }
}

/// Splits `[addr, addr + len)` at page boundaries: (page number, offset in the page, range of
/// the caller's buffer).
fn pieces(addr: u64, len: usize) -> impl Iterator<Item = (u64, usize, std::ops::Range<usize>)> {
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let a = addr + done as u64;
        let off = (a % PAGE as u64) as usize;
        let n = (PAGE - off).min(len - done);
        let piece = (a / PAGE as u64, off, done..done + n);
        done += n;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(size: u64) -> HostMemory {
        HostMemory::new(MemoryConfig {
            base: 0x1000_0000,
            size,
        })
        .unwrap()
    }

    #[test]
    fn alignment_and_no_overlap() {
        let mut m = mem(1 << 20);
        let mut regions = Vec::new();
        for (len, align) in [(1, 1), (100, 64), (4096, 4096), (3, 8), (5000, 256), (7, 1)] {
            let r = m.alloc(len, align).unwrap();
            assert_eq!(r.addr % align as u64, 0, "{r:?} not aligned to {align}");
            assert_eq!(r.len, len);
            regions.push(r);
        }
        for (i, a) in regions.iter().enumerate() {
            for b in &regions[i + 1..] {
                let disjoint = a.addr + a.len as u64 <= b.addr || b.addr + b.len as u64 <= a.addr;
                assert!(disjoint, "{a:?} overlaps {b:?}");
            }
        }
        assert_eq!(m.allocated_bytes(), 1 + 100 + 4096 + 3 + 5000 + 7);
        assert_eq!(m.regions().count(), regions.len());
    }

    #[test]
    fn bad_requests() {
        let mut m = mem(4096);
        assert_eq!(m.alloc(0, 8), Err(MemError::ZeroLength));
        assert_eq!(m.alloc(8, 24), Err(MemError::BadAlignment { align: 24 }));
        assert_eq!(m.alloc(8, 0), Err(MemError::BadAlignment { align: 0 }));
        assert!(HostMemory::new(MemoryConfig { base: 0, size: 0 }).is_err());
        assert!(HostMemory::new(MemoryConfig {
            base: u64::MAX,
            size: 2
        })
        .is_err());
    }

    #[test]
    fn limit_and_reuse_after_free() {
        let mut m = mem(8192);
        let a = m.alloc(4096, 4096).unwrap();
        let b = m.alloc(4096, 1).unwrap();
        let err = m.alloc(1, 1).unwrap_err();
        assert!(
            matches!(
                err,
                MemError::OutOfMemory {
                    free: 0,
                    size: 8192,
                    ..
                }
            ),
            "{err}"
        );
        m.free(a).unwrap();
        // The freed hole is reused, and the two halves of it can be had separately.
        let c = m.alloc(2048, 1).unwrap();
        let d = m.alloc(2048, 1).unwrap();
        assert_eq!((c.addr, d.addr), (a.addr, a.addr + 2048));
        m.free(c).unwrap();
        m.free(d).unwrap();
        m.free(b).unwrap();
        // Everything coalesced back into one hole: the whole space fits again.
        assert_eq!(m.alloc(8192, 1).unwrap().addr, 0x1000_0000);
    }

    #[test]
    fn alignment_can_fail_although_bytes_are_free() {
        let mut m = mem(8192);
        m.alloc(1, 1).unwrap();
        let err = m.alloc(4096, 8192).unwrap_err();
        assert!(
            matches!(err, MemError::OutOfMemory { free: 8191, .. }),
            "{err}"
        );
        assert_eq!(m.alloc(4096, 4096).unwrap().addr, 0x1000_1000);
    }

    #[test]
    fn double_free_and_foreign_region_are_rejected() {
        let mut m = mem(8192);
        let a = m.alloc(100, 1).unwrap();
        let shorter = DmaRegion {
            addr: a.addr,
            len: 50,
        };
        assert_eq!(
            m.free(shorter),
            Err(MemError::NotAllocated {
                addr: a.addr,
                len: 50
            })
        );
        m.free(a).unwrap();
        assert!(matches!(m.free(a), Err(MemError::NotAllocated { .. })));
    }

    #[test]
    fn only_allocated_bytes_are_reachable() {
        let mut m = mem(1 << 20);
        let a = m.alloc(100, 4096).unwrap();
        let b = m.alloc(100, 1).unwrap();
        assert_eq!(b.addr, a.addr + 100, "first fit packs b right after a");
        let mut buf = [0u8; 8];
        assert!(m.read(a.addr, &mut buf).is_ok());
        assert!(m.read(a.addr - 1, &mut buf).is_err());
        // Two adjacent regions are reachable together, but not past the second one.
        assert!(m.is_mapped(a.addr + 96, 8));
        assert!(!m.is_mapped(b.addr + 96, 8));
        assert_eq!(
            m.write(b.addr + 96, &[1; 8]),
            Err(MemError::Unmapped {
                addr: b.addr + 96,
                len: 8
            })
        );
        assert!(!m.is_mapped(u64::MAX, 2));
        // A refused write writes nothing, not even the mapped part.
        let mut tail = [0xffu8; 4];
        m.read(b.addr + 96, &mut tail).unwrap();
        assert_eq!(tail, [0; 4]);
    }

    #[test]
    fn data_round_trips_across_pages_and_is_zero_after_free() {
        let mut m = mem(1 << 20);
        let r = m.alloc(3 * PAGE, 1).unwrap();
        let data: Vec<u8> = (0..2 * PAGE + 10).map(|i| (i * 7 + 1) as u8).collect();
        let at = r.addr + 4000;
        m.write(at, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        m.read(at, &mut back).unwrap();
        assert_eq!(back, data);
        let mut before = [0xffu8; 10];
        m.read(r.addr, &mut before).unwrap();
        assert_eq!(before, [0; 10], "untouched bytes read as zero");
        assert!(m.resident_pages() >= 3);
        m.free(r).unwrap();
        assert_eq!(m.resident_pages(), 0, "freeing whole pages drops them");
        let again = m.alloc(3 * PAGE, 1).unwrap();
        assert_eq!(again.addr, r.addr);
        let mut z = vec![0xffu8; 3 * PAGE];
        m.read(again.addr, &mut z).unwrap();
        assert!(z.iter().all(|b| *b == 0), "a reused region reads as zero");
    }

    #[test]
    fn freeing_part_of_a_page_keeps_the_neighbour() {
        let mut m = mem(1 << 20);
        let a = m.alloc(100, 1).unwrap();
        let b = m.alloc(100, 1).unwrap();
        m.write(a.addr, &[0xaa; 100]).unwrap();
        m.write(b.addr, &[0xbb; 100]).unwrap();
        m.free(a).unwrap();
        let mut back = [0u8; 100];
        m.read(b.addr, &mut back).unwrap();
        assert_eq!(back, [0xbb; 100]);
        let a2 = m.alloc(100, 1).unwrap();
        m.read(a2.addr, &mut back).unwrap();
        assert_eq!(back, [0; 100]);
    }

    #[test]
    fn sparse_footprint() {
        let mut m = HostMemory::new(MemoryConfig {
            base: 1 << 40,
            size: 1 << 36,
        })
        .unwrap();
        let r = m.alloc(1 << 35, 1 << 20).unwrap();
        m.write(r.addr + (1 << 34), &[1, 2, 3]).unwrap();
        assert_eq!(m.resident_pages(), 1);
    }
}
