//! A real PCIe function through VFIO (Linux): the three [`crate::hw`] traits on a board.
//!
//! [`Vfio::open`] follows the kernel's VFIO recipe (`Documentation/driver-api/vfio.rst`):
//!
//! 1. the device's IOMMU group from `/sys/bus/pci/devices/<BDF>/iommu_group`;
//! 2. open `/dev/vfio/<group>` (exists only when the group's devices are bound to `vfio-pci`),
//!    check it is viable, open the container `/dev/vfio/vfio`, check the API version, attach
//!    the group (`VFIO_GROUP_SET_CONTAINER`) and pick the Type1 IOMMU (`VFIO_SET_IOMMU`);
//! 3. `VFIO_GROUP_GET_DEVICE_FD`, then BAR 0 (`VFIO_DEVICE_GET_REGION_INFO` + `mmap`), bus
//!    mastering on in the command register (config space region), and one eventfd per MSI-X
//!    vector (`VFIO_DEVICE_SET_IRQS`).
//!
//! Registers are volatile 32-bit accesses to the mapped BAR. DMA memory is anonymous memory
//! mapped at IOVAs chosen by a small first-fit allocator ([`IovaAllocator`]) with
//! `VFIO_IOMMU_MAP_DMA`; the device sees the IOVA as the bus address. Interrupts are waited
//! for with `poll(2)` on the eventfds; time is `CLOCK_MONOTONIC`.
//!
//! Setup for a board (as root): `modprobe vfio-pci`, then
//! `echo vfio-pci > /sys/bus/pci/devices/<BDF>/driver_override` and
//! `echo <BDF> > /sys/bus/pci/drivers_probe`; the IOMMU must be on (`intel_iommu=on` or
//! `amd_iommu=on`), and the user needs access to `/dev/vfio/<group>` and enough locked memory
//! (`ulimit -l`) for the DMA memory.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::str::FromStr;
use std::sync::atomic::{fence, Ordering};

use thiserror::Error;

use crate::hw::{DmaError, DmaMemory, DmaRegion, Interrupts, RegisterSpace};

/// The parts of `linux/vfio.h` (and `asm-generic/ioctl.h`) used here.
#[allow(non_camel_case_types)]
pub mod sys {
    const IOC_NRSHIFT: u32 = 0;
    const IOC_TYPESHIFT: u32 = 8;
    const IOC_SIZESHIFT: u32 = 16;
    const IOC_DIRSHIFT: u32 = 30;
    const IOC_NONE: u32 = 0;

    /// `_IOC(dir, type, nr, size)`.
    pub const fn ioc(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
        dir << IOC_DIRSHIFT | ty << IOC_TYPESHIFT | nr << IOC_NRSHIFT | size << IOC_SIZESHIFT
    }

    /// `_IO(type, nr)`: VFIO's ioctls carry their size in `argsz`, not in the number.
    pub const fn io(ty: u32, nr: u32) -> u32 {
        ioc(IOC_NONE, ty, nr, 0)
    }

    pub const VFIO_API_VERSION: i32 = 0;
    pub const VFIO_TYPE: u32 = b';' as u32;
    pub const VFIO_BASE: u32 = 100;

    pub const VFIO_TYPE1_IOMMU: u32 = 1;
    pub const VFIO_TYPE1V2_IOMMU: u32 = 3;

    pub const VFIO_GET_API_VERSION: u32 = io(VFIO_TYPE, VFIO_BASE);
    pub const VFIO_CHECK_EXTENSION: u32 = io(VFIO_TYPE, VFIO_BASE + 1);
    pub const VFIO_SET_IOMMU: u32 = io(VFIO_TYPE, VFIO_BASE + 2);
    pub const VFIO_GROUP_GET_STATUS: u32 = io(VFIO_TYPE, VFIO_BASE + 3);
    pub const VFIO_GROUP_SET_CONTAINER: u32 = io(VFIO_TYPE, VFIO_BASE + 4);
    pub const VFIO_GROUP_GET_DEVICE_FD: u32 = io(VFIO_TYPE, VFIO_BASE + 6);
    pub const VFIO_DEVICE_GET_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 7);
    pub const VFIO_DEVICE_GET_REGION_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 8);
    pub const VFIO_DEVICE_GET_IRQ_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 9);
    pub const VFIO_DEVICE_SET_IRQS: u32 = io(VFIO_TYPE, VFIO_BASE + 10);
    pub const VFIO_DEVICE_RESET: u32 = io(VFIO_TYPE, VFIO_BASE + 11);
    pub const VFIO_IOMMU_MAP_DMA: u32 = io(VFIO_TYPE, VFIO_BASE + 13);
    pub const VFIO_IOMMU_UNMAP_DMA: u32 = io(VFIO_TYPE, VFIO_BASE + 14);

    pub const VFIO_GROUP_FLAGS_VIABLE: u32 = 1 << 0;
    pub const VFIO_DEVICE_FLAGS_RESET: u32 = 1 << 0;
    pub const VFIO_DEVICE_FLAGS_PCI: u32 = 1 << 1;
    pub const VFIO_REGION_INFO_FLAG_READ: u32 = 1 << 0;
    pub const VFIO_REGION_INFO_FLAG_WRITE: u32 = 1 << 1;
    pub const VFIO_REGION_INFO_FLAG_MMAP: u32 = 1 << 2;
    pub const VFIO_IRQ_SET_DATA_NONE: u32 = 1 << 0;
    pub const VFIO_IRQ_SET_DATA_EVENTFD: u32 = 1 << 2;
    pub const VFIO_IRQ_SET_ACTION_TRIGGER: u32 = 1 << 5;
    pub const VFIO_DMA_MAP_FLAG_READ: u32 = 1 << 0;
    pub const VFIO_DMA_MAP_FLAG_WRITE: u32 = 1 << 1;

    pub const VFIO_PCI_BAR0_REGION_INDEX: u32 = 0;
    pub const VFIO_PCI_CONFIG_REGION_INDEX: u32 = 7;
    pub const VFIO_PCI_MSIX_IRQ_INDEX: u32 = 2;

    /// PCI configuration space: the command register and its bits.
    pub const PCI_COMMAND: u64 = 0x04;
    pub const PCI_COMMAND_MEMORY: u16 = 1 << 1;
    pub const PCI_COMMAND_MASTER: u16 = 1 << 2;

    /// `struct vfio_group_status`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_group_status {
        pub argsz: u32,
        pub flags: u32,
    }

    /// `struct vfio_device_info`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_device_info {
        pub argsz: u32,
        pub flags: u32,
        pub num_regions: u32,
        pub num_irqs: u32,
        pub cap_offset: u32,
    }

    /// `struct vfio_region_info`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_region_info {
        pub argsz: u32,
        pub flags: u32,
        pub index: u32,
        pub cap_offset: u32,
        pub size: u64,
        pub offset: u64,
    }

    /// `struct vfio_irq_info`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_irq_info {
        pub argsz: u32,
        pub flags: u32,
        pub index: u32,
        pub count: u32,
    }

    /// `struct vfio_irq_set` (its `data[]` follows in the same buffer).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_irq_set {
        pub argsz: u32,
        pub flags: u32,
        pub index: u32,
        pub start: u32,
        pub count: u32,
    }

    /// `struct vfio_iommu_type1_dma_map`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_iommu_type1_dma_map {
        pub argsz: u32,
        pub flags: u32,
        pub vaddr: u64,
        pub iova: u64,
        pub size: u64,
    }

    /// `struct vfio_iommu_type1_dma_unmap`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct vfio_iommu_type1_dma_unmap {
        pub argsz: u32,
        pub flags: u32,
        pub iova: u64,
        pub size: u64,
    }

    /// `argsz` of a struct.
    pub const fn argsz<T>() -> u32 {
        std::mem::size_of::<T>() as u32
    }
}

use sys::*;

/// A PCI address, `domain:bus:device.function`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bdf {
    pub domain: u16,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

impl FromStr for Bdf {
    type Err = VfioError;

    /// `dddd:bb:dd.f` or `bb:dd.f` (domain 0), hexadecimal as `lspci -D` prints.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason| VfioError::BadBdf {
            input: s.to_string(),
            reason,
        };
        let (head, function) = s.rsplit_once('.').ok_or(bad("no '.function'"))?;
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, device) = match parts[..] {
            [d, b, dev] => (d, b, dev),
            [b, dev] => ("0", b, dev),
            _ => return Err(bad("expected [domain:]bus:device.function")),
        };
        let hex = |t: &str, digits: usize| {
            (!t.is_empty() && t.len() <= digits)
                .then(|| u32::from_str_radix(t, 16).ok())
                .flatten()
                .ok_or(bad(
                    "fields are hexadecimal: 4 digits domain, 2 bus, 2 device, 1 function",
                ))
        };
        let (domain, bus, device, function) = (
            hex(domain, 4)?,
            hex(bus, 2)?,
            hex(device, 2)?,
            hex(function, 1)?,
        );
        if device > 0x1F || function > 7 {
            return Err(bad("device is at most 1f and function at most 7"));
        }
        Ok(Bdf {
            domain: domain as u16,
            bus: bus as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

/// Why the VFIO backend could not be had.
#[derive(Debug, Error)]
pub enum VfioError {
    #[error("bad PCI address {input:?}: {reason}")]
    BadBdf { input: String, reason: &'static str },
    #[error("no PCI device {bdf}: {path} does not exist (check the address with `lspci -D`)")]
    NoDevice { bdf: Bdf, path: PathBuf },
    #[error("PCI device {bdf} has no IOMMU group ({path}): is the IOMMU on (intel_iommu=on / amd_iommu=on, VT-d / AMD-Vi in the firmware)?")]
    NoIommuGroup { bdf: Bdf, path: PathBuf },
    #[error("cannot open {path} for {bdf}: {source}; {hint}")]
    Open {
        bdf: Bdf,
        path: PathBuf,
        hint: String,
        source: io::Error,
    },
    #[error("IOMMU group {group} of {bdf} is not viable: every device in /sys/kernel/iommu_groups/{group}/devices must be bound to vfio-pci or to no driver")]
    GroupNotViable { bdf: Bdf, group: u32 },
    #[error("VFIO API version {found}, expected {VFIO_API_VERSION}")]
    ApiVersion { found: i32 },
    #[error("the VFIO container offers no Type1 IOMMU")]
    NoType1Iommu,
    #[error("{what} for {bdf} failed: {source}")]
    Ioctl {
        bdf: Bdf,
        what: &'static str,
        source: io::Error,
    },
    #[error("{0}: {1}")]
    Device(Bdf, String),
}

/// A first-fit allocator of bus addresses (IOVAs) in `[base, end)`, page granular.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IovaAllocator {
    /// Free ranges `[start, end)`, sorted, never adjacent.
    free: Vec<(u64, u64)>,
    page: u64,
}

impl IovaAllocator {
    /// All of `[base, end)` free; `page` a power of two.
    pub fn new(base: u64, end: u64, page: u64) -> Self {
        debug_assert!(page.is_power_of_two());
        IovaAllocator {
            free: vec![(base, end)],
            page,
        }
    }

    /// Bytes `len` takes: whole pages.
    pub fn rounded(&self, len: u64) -> u64 {
        len.max(1).next_multiple_of(self.page)
    }

    /// `len` bytes (rounded up to pages) aligned to `align` (a power of two; at least a
    /// page), or `None` when no free range fits.
    pub fn alloc(&mut self, len: u64, align: u64) -> Option<u64> {
        let len = self.rounded(len);
        let align = align.max(self.page);
        let (i, start) = self.free.iter().enumerate().find_map(|(i, &(s, e))| {
            let a = s.checked_next_multiple_of(align)?;
            (a.checked_add(len)? <= e).then_some((i, a))
        })?;
        let (s, e) = self.free[i];
        let mut pieces = Vec::with_capacity(2);
        if s < start {
            pieces.push((s, start));
        }
        if start + len < e {
            pieces.push((start + len, e));
        }
        self.free.splice(i..=i, pieces);
        Some(start)
    }

    /// Give back `[addr, addr + len)` (as allocated).
    pub fn free(&mut self, addr: u64, len: u64) {
        let end = addr + self.rounded(len);
        let i = self.free.partition_point(|&(s, _)| s < addr);
        self.free.insert(i, (addr, end));
        // Merge with the neighbours.
        if i + 1 < self.free.len() && self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 = self.free.remove(i + 1).1;
        }
        if i > 0 && self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 = self.free.remove(i).1;
        }
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> u64 {
        self.free.iter().map(|(s, e)| e - s).sum()
    }
}

/// Where DMA memory goes in the device's address space: above 4 GiB (so 64-bit addressing
/// is exercised and the x86 MSI window is avoided), within 39 bits (the smallest common
/// IOMMU address width).
const IOVA_BASE: u64 = 1 << 32;
const IOVA_END: u64 = 1 << 38;
const PAGE: u64 = 4096;
/// Most MSI-X vectors used (the interrupt mask is 64 bits).
const MAX_VECTORS: u32 = 64;

/// One DMA mapping: `len` bytes at `vaddr` seen by the device at the key IOVA.
struct Mapping {
    vaddr: NonNull<u8>,
    len: usize,
}

/// A PCIe function through VFIO.
pub struct Vfio {
    bdf: Bdf,
    bar: NonNull<u8>,
    bar_len: usize,
    maps: BTreeMap<u64, Mapping>,
    iova: IovaAllocator,
    irqs: Vec<OwnedFd>,
    // Closed in this order (fields drop in declaration order): device, group, container. The
    // group is only held open: closing it would detach it from the container.
    device: OwnedFd,
    _group: OwnedFd,
    container: OwnedFd,
}

// SAFETY: the raw pointers are private mappings of this process that nothing else aliases; all
// access goes through `&mut self`.
unsafe impl Send for Vfio {}

impl fmt::Debug for Vfio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vfio")
            .field("bdf", &self.bdf)
            .field("bar_len", &self.bar_len)
            .field("vectors", &self.irqs.len())
            .field("dma_mappings", &self.maps.len())
            .finish_non_exhaustive()
    }
}

fn last_os_error() -> io::Error {
    io::Error::last_os_error()
}

/// `ioctl(fd, request, arg)`, the errno as an error.
///
/// # Safety
/// `arg` must be what `request` expects (a pointer to a live struct of the right layout, or
/// an integer).
unsafe fn ioctl<T>(fd: RawFd, request: u32, arg: T) -> io::Result<i32> {
    // SAFETY: the caller's contract.
    let r = unsafe { libc::ioctl(fd, request as _, arg) };
    if r < 0 {
        Err(last_os_error())
    } else {
        Ok(r)
    }
}

fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

impl Vfio {
    /// Open the PCI function `bdf` (e.g. `"0000:03:00.0"`).
    pub fn open(bdf: &str) -> Result<Self, VfioError> {
        Self::open_at(
            Path::new("/sys/bus/pci/devices"),
            Path::new("/dev/vfio"),
            bdf.parse()?,
        )
    }

    /// [`Vfio::open`] with other sysfs and `/dev/vfio` roots.
    pub fn open_at(sysfs_devices: &Path, dev_vfio: &Path, bdf: Bdf) -> Result<Self, VfioError> {
        let dev_dir = sysfs_devices.join(bdf.to_string());
        if !dev_dir.exists() {
            return Err(VfioError::NoDevice { bdf, path: dev_dir });
        }
        let link = dev_dir.join("iommu_group");
        let group: u32 = std::fs::read_link(&link)
            .ok()
            .and_then(|t| t.file_name()?.to_str()?.parse().ok())
            .ok_or(VfioError::NoIommuGroup {
                bdf,
                path: link.clone(),
            })?;

        let group_path = dev_vfio.join(group.to_string());
        let group_fd: OwnedFd = open_rw(&group_path)
            .map_err(|source| VfioError::Open {
                bdf,
                path: group_path.clone(),
                hint: format!(
                    "is {bdf} bound to vfio-pci (echo vfio-pci > {}/driver_override; \
                     echo {bdf} > /sys/bus/pci/drivers_probe) and may this user open the group?",
                    dev_dir.display()
                ),
                source,
            })?
            .into();
        let ioctl_err = |what| move |source| VfioError::Ioctl { bdf, what, source };

        let mut status = vfio_group_status {
            argsz: argsz::<vfio_group_status>(),
            flags: 0,
        };
        // SAFETY: VFIO_GROUP_GET_STATUS fills a vfio_group_status.
        unsafe { ioctl(group_fd.as_raw_fd(), VFIO_GROUP_GET_STATUS, &mut status) }
            .map_err(ioctl_err("VFIO_GROUP_GET_STATUS"))?;
        if status.flags & VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable { bdf, group });
        }

        let container_path = dev_vfio.join("vfio");
        let container: OwnedFd = open_rw(&container_path)
            .map_err(|source| VfioError::Open {
                bdf,
                path: container_path,
                hint: "is the vfio-pci module loaded (modprobe vfio-pci)?".into(),
                source,
            })?
            .into();
        let cfd = container.as_raw_fd();
        // SAFETY: VFIO_GET_API_VERSION takes no argument.
        let version = unsafe { ioctl(cfd, VFIO_GET_API_VERSION, 0) }
            .map_err(ioctl_err("VFIO_GET_API_VERSION"))?;
        if version != VFIO_API_VERSION {
            return Err(VfioError::ApiVersion { found: version });
        }
        let raw_container: libc::c_int = cfd;
        // SAFETY: VFIO_GROUP_SET_CONTAINER takes a pointer to the container fd.
        unsafe {
            ioctl(
                group_fd.as_raw_fd(),
                VFIO_GROUP_SET_CONTAINER,
                &raw_container,
            )
        }
        .map_err(ioctl_err("VFIO_GROUP_SET_CONTAINER"))?;
        let iommu = [VFIO_TYPE1V2_IOMMU, VFIO_TYPE1_IOMMU]
            .into_iter()
            // SAFETY: VFIO_CHECK_EXTENSION takes the extension number.
            .find(|&t| {
                unsafe { ioctl(cfd, VFIO_CHECK_EXTENSION, t as libc::c_ulong) }.is_ok_and(|r| r > 0)
            })
            .ok_or(VfioError::NoType1Iommu)?;
        // SAFETY: VFIO_SET_IOMMU takes the IOMMU type.
        unsafe { ioctl(cfd, VFIO_SET_IOMMU, iommu as libc::c_ulong) }
            .map_err(ioctl_err("VFIO_SET_IOMMU"))?;

        let name = CString::new(bdf.to_string())
            .map_err(|_| VfioError::Device(bdf, "address with a NUL byte".into()))?;
        // SAFETY: VFIO_GROUP_GET_DEVICE_FD takes a NUL-terminated device name.
        let dfd = unsafe {
            ioctl(
                group_fd.as_raw_fd(),
                VFIO_GROUP_GET_DEVICE_FD,
                name.as_ptr(),
            )
        }
        .map_err(ioctl_err("VFIO_GROUP_GET_DEVICE_FD"))?;
        // SAFETY: the ioctl returned a new file descriptor that we now own.
        let device = unsafe { OwnedFd::from_raw_fd(dfd) };

        let mut info = vfio_device_info {
            argsz: argsz::<vfio_device_info>(),
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_INFO fills a vfio_device_info.
        unsafe { ioctl(device.as_raw_fd(), VFIO_DEVICE_GET_INFO, &mut info) }
            .map_err(ioctl_err("VFIO_DEVICE_GET_INFO"))?;
        if info.flags & VFIO_DEVICE_FLAGS_PCI == 0 {
            return Err(VfioError::Device(bdf, "not a vfio-pci device".into()));
        }

        let (bar, bar_len) = map_bar0(&device, bdf)?;
        let mut vfio = Vfio {
            bdf,
            bar,
            bar_len,
            maps: BTreeMap::new(),
            iova: IovaAllocator::new(IOVA_BASE, IOVA_END, PAGE),
            irqs: Vec::new(),
            device,
            _group: group_fd,
            container,
        };
        vfio.enable_bus_master()?;
        vfio.enable_msix()?;
        Ok(vfio)
    }

    /// The PCI address.
    pub fn bdf(&self) -> Bdf {
        self.bdf
    }

    fn region_info(&self, index: u32) -> Result<vfio_region_info, VfioError> {
        region_info(&self.device, self.bdf, index)
    }

    /// Turn on memory decoding and bus mastering in the PCI command register.
    fn enable_bus_master(&mut self) -> Result<(), VfioError> {
        let cfg = self.region_info(VFIO_PCI_CONFIG_REGION_INDEX)?;
        let at = (cfg.offset + PCI_COMMAND) as libc::off_t;
        let fd = self.device.as_raw_fd();
        let bdf = self.bdf;
        let err = |what| VfioError::Ioctl {
            bdf,
            what,
            source: last_os_error(),
        };
        let mut cmd = [0u8; 2];
        // SAFETY: reads 2 bytes into `cmd`.
        if unsafe { libc::pread(fd, cmd.as_mut_ptr().cast(), 2, at) } != 2 {
            return Err(err("reading the PCI command register"));
        }
        let v = u16::from_le_bytes(cmd) | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
        let out = v.to_le_bytes();
        // SAFETY: writes 2 bytes from `out`.
        if unsafe { libc::pwrite(fd, out.as_ptr().cast(), 2, at) } != 2 {
            return Err(err("writing the PCI command register"));
        }
        Ok(())
    }

    /// One eventfd per MSI-X vector (at most 64), triggered by the device's messages.
    fn enable_msix(&mut self) -> Result<(), VfioError> {
        let bdf = self.bdf;
        let mut irq = vfio_irq_info {
            argsz: argsz::<vfio_irq_info>(),
            index: VFIO_PCI_MSIX_IRQ_INDEX,
            ..Default::default()
        };
        // SAFETY: VFIO_DEVICE_GET_IRQ_INFO fills a vfio_irq_info.
        unsafe { ioctl(self.device.as_raw_fd(), VFIO_DEVICE_GET_IRQ_INFO, &mut irq) }.map_err(
            |source| VfioError::Ioctl {
                bdf,
                what: "VFIO_DEVICE_GET_IRQ_INFO",
                source,
            },
        )?;
        let n = irq.count.min(MAX_VECTORS);
        if n == 0 {
            return Ok(());
        }
        for _ in 0..n {
            // SAFETY: eventfd has no memory arguments.
            let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if fd < 0 {
                let source = last_os_error();
                return Err(VfioError::Ioctl {
                    bdf,
                    what: "eventfd",
                    source,
                });
            }
            // SAFETY: a new descriptor we own.
            self.irqs.push(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let fds: Vec<i32> = self.irqs.iter().map(|f| f.as_raw_fd()).collect();
        self.set_irqs(
            VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
            &fds,
        )
    }

    /// `VFIO_DEVICE_SET_IRQS` on the MSI-X index for vectors `0..fds.len()`.
    fn set_irqs(&mut self, flags: u32, fds: &[i32]) -> Result<(), VfioError> {
        let head = std::mem::size_of::<vfio_irq_set>();
        // u64 words keep the buffer aligned for the header.
        let mut buf = vec![0u64; (head + 4 * fds.len()).div_ceil(8)];
        let hdr = vfio_irq_set {
            argsz: (head + 4 * fds.len()) as u32,
            flags,
            index: VFIO_PCI_MSIX_IRQ_INDEX,
            start: 0,
            count: fds.len() as u32,
        };
        let bytes: *mut u8 = buf.as_mut_ptr().cast();
        // SAFETY: `buf` holds `head + 4 * len` bytes, 8-byte aligned; the header and the fds are
        // written within it.
        unsafe {
            bytes.cast::<vfio_irq_set>().write(hdr);
            std::ptr::copy_nonoverlapping(
                fds.as_ptr().cast::<u8>(),
                bytes.add(head),
                4 * fds.len(),
            );
        }
        // SAFETY: VFIO_DEVICE_SET_IRQS takes a vfio_irq_set followed by its data.
        unsafe { ioctl(self.device.as_raw_fd(), VFIO_DEVICE_SET_IRQS, bytes) }
            .map(|_| ())
            .map_err(|source| VfioError::Ioctl {
                bdf: self.bdf,
                what: "VFIO_DEVICE_SET_IRQS",
                source,
            })
    }

    /// Function-level reset (when the device supports one).
    pub fn reset(&mut self) -> Result<(), VfioError> {
        let mut info = vfio_device_info {
            argsz: argsz::<vfio_device_info>(),
            ..Default::default()
        };
        let fd = self.device.as_raw_fd();
        let bdf = self.bdf;
        // SAFETY: VFIO_DEVICE_GET_INFO fills a vfio_device_info.
        unsafe { ioctl(fd, VFIO_DEVICE_GET_INFO, &mut info) }.map_err(|source| {
            VfioError::Ioctl {
                bdf,
                what: "VFIO_DEVICE_GET_INFO",
                source,
            }
        })?;
        if info.flags & VFIO_DEVICE_FLAGS_RESET == 0 {
            return Err(VfioError::Device(bdf, "the device offers no reset".into()));
        }
        // SAFETY: VFIO_DEVICE_RESET takes no argument.
        unsafe { ioctl(fd, VFIO_DEVICE_RESET, 0) }
            .map(|_| ())
            .map_err(|source| VfioError::Ioctl {
                bdf,
                what: "VFIO_DEVICE_RESET",
                source,
            })
    }

    /// The mapping holding `[addr, addr + len)`, as a pointer to `addr`.
    ///
    /// # Panics
    /// When the range is not inside one allocation: the driver addressed memory it does not
    /// own, a bug worth stopping for rather than a silent stray access.
    fn translate(&self, addr: u64, len: usize) -> *mut u8 {
        let hit = self.maps.range(..=addr).next_back().and_then(|(&iova, m)| {
            let off = (addr - iova) as usize;
            (off.checked_add(len)? <= m.len).then(|| {
                // SAFETY: `off + len` lies inside the mapping.
                unsafe { m.vaddr.as_ptr().add(off) }
            })
        });
        match hit {
            Some(p) => p,
            None => panic!(
                "DMA access {addr:#x}+{len} outside every allocation of {}",
                self.bdf
            ),
        }
    }

    fn unmap(&mut self, iova: u64, m: &Mapping) {
        let mut unmap = vfio_iommu_type1_dma_unmap {
            argsz: argsz::<vfio_iommu_type1_dma_unmap>(),
            flags: 0,
            iova,
            size: m.len as u64,
        };
        // SAFETY: VFIO_IOMMU_UNMAP_DMA takes a vfio_iommu_type1_dma_unmap; then the memory,
        // no longer reachable by the device, is returned.
        unsafe {
            let _ = ioctl(self.container.as_raw_fd(), VFIO_IOMMU_UNMAP_DMA, &mut unmap);
            libc::munmap(m.vaddr.as_ptr().cast(), m.len);
        }
        self.iova.free(iova, m.len as u64);
    }
}

fn region_info(device: &OwnedFd, bdf: Bdf, index: u32) -> Result<vfio_region_info, VfioError> {
    let mut r = vfio_region_info {
        argsz: argsz::<vfio_region_info>(),
        index,
        ..Default::default()
    };
    // SAFETY: VFIO_DEVICE_GET_REGION_INFO fills a vfio_region_info.
    unsafe { ioctl(device.as_raw_fd(), VFIO_DEVICE_GET_REGION_INFO, &mut r) }.map_err(
        |source| VfioError::Ioctl {
            bdf,
            what: "VFIO_DEVICE_GET_REGION_INFO",
            source,
        },
    )?;
    Ok(r)
}

fn map_bar0(device: &OwnedFd, bdf: Bdf) -> Result<(NonNull<u8>, usize), VfioError> {
    let r = region_info(device, bdf, VFIO_PCI_BAR0_REGION_INDEX)?;
    let need =
        VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP;
    if r.flags & need != need || r.size == 0 {
        return Err(VfioError::Device(
            bdf,
            format!(
                "BAR 0 is not a mappable read-write region (flags {:#x}, {} bytes)",
                r.flags, r.size
            ),
        ));
    }
    let len = r.size as usize;
    // SAFETY: maps the device's BAR 0 region as VFIO describes it; nothing else maps it here.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            device.as_raw_fd(),
            r.offset as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        let e = last_os_error();
        return Err(VfioError::Device(bdf, format!("mmap of BAR 0 failed: {e}")));
    }
    NonNull::new(p.cast())
        .map(|p| (p, len))
        .ok_or(VfioError::Device(bdf, "mmap of BAR 0 returned null".into()))
}

impl Drop for Vfio {
    fn drop(&mut self) {
        if !self.irqs.is_empty() {
            let _ = self.set_irqs(VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER, &[]);
        }
        for (iova, m) in std::mem::take(&mut self.maps) {
            self.unmap(iova, &m);
        }
        // SAFETY: the BAR mapping made in `open`, unmapped once.
        unsafe {
            libc::munmap(self.bar.as_ptr().cast(), self.bar_len);
        }
    }
}

impl RegisterSpace for Vfio {
    /// A volatile 32-bit read; reads outside BAR 0 (or unaligned) give all ones, as a PCIe
    /// read of nothing does.
    fn read32(&mut self, offset: u32) -> u32 {
        let o = offset as usize;
        if !o.is_multiple_of(4) || o + 4 > self.bar_len {
            return u32::MAX;
        }
        // SAFETY: an aligned dword inside the mapped BAR.
        u32::from_le(unsafe { self.bar.as_ptr().add(o).cast::<u32>().read_volatile() })
    }

    /// A volatile 32-bit write; writes outside BAR 0 (or unaligned) are dropped.
    fn write32(&mut self, offset: u32, value: u32) {
        let o = offset as usize;
        if !o.is_multiple_of(4) || o + 4 > self.bar_len {
            return;
        }
        // SAFETY: an aligned dword inside the mapped BAR.
        unsafe {
            self.bar
                .as_ptr()
                .add(o)
                .cast::<u32>()
                .write_volatile(value.to_le())
        }
    }
}

impl DmaMemory for Vfio {
    fn alloc(&mut self, len: usize, align: usize) -> Result<DmaRegion, DmaError> {
        if !align.is_power_of_two() {
            return Err(DmaError::BadAlignment { align });
        }
        let size = self.iova.rounded(len as u64);
        let iova = self
            .iova
            .alloc(size, align as u64)
            .ok_or(DmaError::OutOfMemory { len })?;
        // SAFETY: a fresh anonymous mapping (zero-filled by the kernel).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        let Some(vaddr) = NonNull::new(p.cast::<u8>()).filter(|_| p != libc::MAP_FAILED) else {
            self.iova.free(iova, size);
            return Err(DmaError::Map(format!(
                "mmap of {size} bytes: {}",
                last_os_error()
            )));
        };
        let mut map = vfio_iommu_type1_dma_map {
            argsz: argsz::<vfio_iommu_type1_dma_map>(),
            flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
            vaddr: vaddr.as_ptr() as u64,
            iova,
            size,
        };
        // SAFETY: VFIO_IOMMU_MAP_DMA takes a vfio_iommu_type1_dma_map of memory we own.
        if let Err(e) = unsafe { ioctl(self.container.as_raw_fd(), VFIO_IOMMU_MAP_DMA, &mut map) } {
            // SAFETY: the mapping just made, never shared.
            unsafe { libc::munmap(vaddr.as_ptr().cast(), size as usize) };
            self.iova.free(iova, size);
            return Err(DmaError::Map(format!(
                "VFIO_IOMMU_MAP_DMA of {size} bytes at {iova:#x}: {e} (is `ulimit -l` large enough?)"
            )));
        }
        self.maps.insert(
            iova,
            Mapping {
                vaddr,
                len: size as usize,
            },
        );
        Ok(DmaRegion { addr: iova, len })
    }

    fn free(&mut self, region: DmaRegion) {
        if let Some(m) = self.maps.remove(&region.addr) {
            self.unmap(region.addr, &m);
        }
    }

    fn read(&mut self, addr: u64, buf: &mut [u8]) {
        let p = self.translate(addr, buf.len());
        // What the device wrote before we looked must not be read from before the look.
        fence(Ordering::Acquire);
        // SAFETY: `translate` checked the range lies in one live mapping.
        unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len()) }
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        let p = self.translate(addr, data.len());
        // SAFETY: `translate` checked the range lies in one live mapping.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) }
    }
}

impl Interrupts for Vfio {
    fn vectors(&self) -> usize {
        self.irqs.len()
    }

    fn wait(&mut self, mask: u64, timeout_ns: u64) -> u64 {
        let mut fds: Vec<libc::pollfd> = self
            .irqs
            .iter()
            .enumerate()
            .filter(|(v, _)| mask >> v & 1 == 1)
            .map(|(_, f)| libc::pollfd {
                fd: f.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let deadline = self.now_ns().saturating_add(timeout_ns);
        loop {
            let left = deadline.saturating_sub(self.now_ns());
            let ms = left.div_ceil(1_000_000).min(i32::MAX as u64) as libc::c_int;
            // SAFETY: `fds` is a live array of `fds.len()` pollfds.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 && last_os_error().kind() == io::ErrorKind::Interrupted && left > 0 {
                continue;
            }
            if n <= 0 {
                return 0;
            }
            break;
        }
        let mut fired = 0;
        for (v, f) in self.irqs.iter().enumerate() {
            let Some(p) = fds.iter().find(|p| p.fd == f.as_raw_fd()) else {
                continue;
            };
            if p.revents & libc::POLLIN != 0 {
                let mut count = [0u8; 8];
                // SAFETY: reads the eventfd's 8-byte counter into `count`, clearing it.
                unsafe { libc::read(p.fd, count.as_mut_ptr().cast(), 8) };
                fired |= 1 << v;
            }
        }
        fired
    }

    fn now_ns(&mut self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: fills `ts`.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The values `linux/vfio.h` gives (printed by a C program including it, x86-64).
    #[test]
    fn ioctl_numbers_match_the_kernel_header() {
        assert_eq!(VFIO_GET_API_VERSION, 0x3B64);
        assert_eq!(VFIO_CHECK_EXTENSION, 0x3B65);
        assert_eq!(VFIO_SET_IOMMU, 0x3B66);
        assert_eq!(VFIO_GROUP_GET_STATUS, 0x3B67);
        assert_eq!(VFIO_GROUP_SET_CONTAINER, 0x3B68);
        assert_eq!(VFIO_GROUP_GET_DEVICE_FD, 0x3B6A);
        assert_eq!(VFIO_DEVICE_GET_INFO, 0x3B6B);
        assert_eq!(VFIO_DEVICE_GET_REGION_INFO, 0x3B6C);
        assert_eq!(VFIO_DEVICE_GET_IRQ_INFO, 0x3B6D);
        assert_eq!(VFIO_DEVICE_SET_IRQS, 0x3B6E);
        assert_eq!(VFIO_DEVICE_RESET, 0x3B6F);
        assert_eq!(VFIO_IOMMU_MAP_DMA, 0x3B71);
        assert_eq!(VFIO_IOMMU_UNMAP_DMA, 0x3B72);
        // _IOC with a direction and a size: TUNGETFEATURES = _IOR('T', 207, unsigned int)
        assert_eq!(sys::ioc(2, b'T' as u32, 207, 4), 0x8004_54CF);
    }

    #[test]
    fn struct_layouts_match_the_kernel_header() {
        assert_eq!(size_of::<vfio_group_status>(), 8);
        assert_eq!(size_of::<vfio_device_info>(), 20);
        assert_eq!(size_of::<vfio_region_info>(), 32);
        assert_eq!(offset_of!(vfio_region_info, size), 16);
        assert_eq!(offset_of!(vfio_region_info, offset), 24);
        assert_eq!(size_of::<vfio_irq_info>(), 16);
        assert_eq!(size_of::<vfio_irq_set>(), 20);
        assert_eq!(size_of::<vfio_iommu_type1_dma_map>(), 32);
        assert_eq!(offset_of!(vfio_iommu_type1_dma_map, vaddr), 8);
        assert_eq!(size_of::<vfio_iommu_type1_dma_unmap>(), 24);
    }

    #[test]
    fn pci_addresses_parse_and_print() {
        let b: Bdf = "0000:03:00.1".parse().unwrap();
        assert_eq!(
            b,
            Bdf {
                domain: 0,
                bus: 3,
                device: 0,
                function: 1
            }
        );
        assert_eq!(b.to_string(), "0000:03:00.1");
        let b: Bdf = "af:1f.7".parse().unwrap();
        assert_eq!(b.to_string(), "0000:af:1f.7");
        assert_eq!("10000:00:00.0".parse::<Bdf>().ok(), None);
        assert_eq!(
            "beef:AB:0c.2".parse::<Bdf>().unwrap().to_string(),
            "beef:ab:0c.2"
        );
        for bad in [
            "",
            "03:00",
            "0000:03:20.0",
            "0000:03:00.8",
            "zz:00.0",
            "0:0:0:0.0",
            "03:00.",
            "03:.0",
        ] {
            let e = bad.parse::<Bdf>().unwrap_err();
            assert!(matches!(e, VfioError::BadBdf { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn iova_allocator_aligns_reuses_and_merges() {
        let mut a = IovaAllocator::new(0x1_0000, 0x2_0000, 0x1000);
        assert_eq!(a.alloc(1, 1), Some(0x1_0000));
        assert_eq!(
            a.alloc(0x1001, 0x1000),
            Some(0x1_1000),
            "rounded to 2 pages"
        );
        assert_eq!(
            a.alloc(0x1000, 0x4000),
            Some(0x1_4000),
            "aligned, leaving a hole"
        );
        assert_eq!(
            a.alloc(0x1000, 0x1000),
            Some(0x1_3000),
            "first fit takes the hole"
        );
        assert_eq!(a.free_bytes(), 0x1_0000 - 0x5000);
        assert_eq!(a.alloc(0x1_0000, 0x1000), None, "no room");
        a.free(0x1_1000, 0x1001);
        a.free(0x1_0000, 1);
        a.free(0x1_3000, 0x1000);
        assert_eq!(
            a.alloc(0x4000, 0x1000),
            Some(0x1_0000),
            "freed neighbours merged"
        );
        a.free(0x1_0000, 0x4000);
        a.free(0x1_4000, 0x1000);
        assert_eq!(
            a,
            IovaAllocator::new(0x1_0000, 0x2_0000, 0x1000),
            "all merged back"
        );
        assert_eq!(a.alloc(0x1_0000, 0x1_0000), Some(0x1_0000));
    }

    fn scratch_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nicgen-vfio-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_missing_device_is_named_with_what_to_check() {
        let e = Vfio::open("dead:ff:1f.7").unwrap_err();
        assert!(matches!(e, VfioError::NoDevice { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("dead:ff:1f.7") && msg.contains("lspci"),
            "{msg}"
        );
        assert!(matches!(
            Vfio::open("not-a-bdf"),
            Err(VfioError::BadBdf { .. })
        ));
    }

    #[test]
    fn a_device_without_iommu_group_or_vfio_binding_is_explained() {
        let sys = scratch_dir("sys");
        let dev = scratch_dir("dev");
        let bdf: Bdf = "0000:03:00.0".parse().unwrap();
        std::fs::create_dir_all(sys.join("0000:03:00.0")).unwrap();
        let e = Vfio::open_at(&sys, &dev, bdf).unwrap_err();
        assert!(matches!(e, VfioError::NoIommuGroup { .. }), "{e}");
        assert!(
            e.to_string().contains("0000:03:00.0") && e.to_string().contains("IOMMU"),
            "{e}"
        );

        std::os::unix::fs::symlink(
            "../../../kernel/iommu_groups/4242",
            sys.join("0000:03:00.0/iommu_group"),
        )
        .unwrap();
        let e = Vfio::open_at(&sys, &dev, bdf).unwrap_err();
        match &e {
            VfioError::Open { path, .. } => assert_eq!(path, &dev.join("4242")),
            e => panic!("{e}"),
        }
        let msg = e.to_string();
        assert!(
            msg.contains("0000:03:00.0") && msg.contains("vfio-pci"),
            "{msg}"
        );
        assert!(msg.contains("driver_override"), "{msg}");
        let _ = std::fs::remove_dir_all(sys);
        let _ = std::fs::remove_dir_all(dev);
    }
}
