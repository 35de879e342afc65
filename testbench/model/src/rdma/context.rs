//! Verbs-level contexts: host memory, protection domains, memory regions and the QP state
//! machine with its attributes.

use std::fmt;
use std::net::IpAddr;

/// Access rights of a memory region (IBV_ACCESS_* meanings); local read is always allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access(pub u8);

impl Access {
    /// The local side may write (READ responses and atomic results land here).
    pub const LOCAL_WRITE: Access = Access(1);
    /// A remote RDMA WRITE may target the region.
    pub const REMOTE_WRITE: Access = Access(2);
    /// A remote RDMA READ may source the region.
    pub const REMOTE_READ: Access = Access(4);
    /// A remote atomic may target the region.
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// All of the above.
    pub const ALL: Access = Access(15);

    /// Whether every right in `other` is in `self`.
    pub fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, o: Access) -> Access {
        Access(self.0 | o.0)
    }
}

/// A registered memory region: `[va, va + len)` of the host memory under a PD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mr {
    /// Key the local side names the region with in work requests.
    pub lkey: u32,
    /// Key a remote side names the region with in RETH/AtomicETH.
    pub rkey: u32,
    /// Protection domain.
    pub pd: u32,
    /// First virtual address.
    pub va: u64,
    /// Length in bytes.
    pub len: u64,
    /// Access rights.
    pub access: Access,
}

impl Mr {
    /// Whether `[va, va + len)` lies inside the region (a zero-length range at any address
    /// inside or at the end counts).
    pub fn covers(&self, va: u64, len: u64) -> bool {
        va >= self.va
            && va
                .checked_add(len)
                .is_some_and(|end| end <= self.va.wrapping_add(self.len))
    }

    /// The region `[va, va + len)` under `pd` with `access`, named by `key` locally and
    /// remotely.
    pub fn keyed(key: u32, pd: u32, va: u64, len: u64, access: Access) -> Mr {
        Mr {
            lkey: key,
            rkey: key,
            pd,
            va,
            len,
            access,
        }
    }

    /// The checks after the key's: PD, bounds, rights, in that order; the region when all pass.
    pub fn check(&self, pd: u32, va: u64, len: u64, need: Access) -> Result<Mr, AccessError> {
        if self.pd != pd {
            return Err(AccessError::WrongPd);
        }
        if !self.covers(va, len) {
            return Err(AccessError::OutOfBounds);
        }
        if !self.access.contains(need) {
            return Err(AccessError::NoPermission);
        }
        Ok(*self)
    }
}

/// A memory-region table as the NIC holds it: `entries` slots, each empty or one region, named
/// by mlx5-style keys `(index << 8) | tag` (lkey = rkey) where the caller picks the slot and
/// the 8-bit tag, so a re-registration under a new tag turns the old key stale.
#[derive(Clone, Debug)]
pub struct MrTable {
    slots: Vec<Option<Mr>>,
}

impl MrTable {
    /// An empty table of `entries` slots.
    pub fn new(entries: usize) -> MrTable {
        MrTable {
            slots: vec![None; entries],
        }
    }

    /// The key of slot `index` with `tag`.
    pub fn key(index: u32, tag: u8) -> u32 {
        (index << 8) | u32::from(tag)
    }

    /// Registers `[va, va + len)` under `pd` with `access` in slot `index` with `tag`,
    /// replacing what the slot held; returns the region (its key in `lkey` and `rkey`).
    /// Panics when `index` is not below the table size.
    pub fn register(
        &mut self,
        index: u32,
        tag: u8,
        pd: u32,
        va: u64,
        len: u64,
        access: Access,
    ) -> Mr {
        let mr = Mr::keyed(MrTable::key(index, tag), pd, va, len, access);
        self.slots[index as usize] = Some(mr);
        mr
    }

    /// Empties slot `index`. Panics when `index` is not below the table size.
    pub fn deregister(&mut self, index: u32) {
        self.slots[index as usize] = None;
    }

    /// The region in slot `index`, whatever its tag.
    pub fn slot(&self, index: u32) -> Option<&Mr> {
        self.slots.get(index as usize)?.as_ref()
    }

    /// The region `key` names: its slot exists and holds a region with the key's tag.
    pub fn lookup(&self, key: u32) -> Option<&Mr> {
        self.slots
            .get((key >> 8) as usize)?
            .as_ref()
            .filter(|m| m.lkey == key)
    }

    /// Checks an access by key (local or remote: the keys are the same): key, PD, bounds,
    /// rights, as [`Host::check_remote`] does.
    pub fn check(
        &self,
        key: u32,
        pd: u32,
        va: u64,
        len: u64,
        need: Access,
    ) -> Result<Mr, AccessError> {
        self.lookup(key)
            .ok_or(AccessError::BadKey)?
            .check(pd, va, len, need)
    }
}

/// Why an access to a memory region was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No region has that key.
    BadKey,
    /// The region belongs to another protection domain.
    WrongPd,
    /// The range is not inside the region.
    OutOfBounds,
    /// The region lacks the right.
    NoPermission,
}

/// The host side of a node: flat memory starting at virtual address 0, protection domains and
/// the memory region table.
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// The bytes of host memory; virtual address = index.
    pub mem: Vec<u8>,
    pds: Vec<u32>,
    mrs: Vec<Mr>,
    next_key: u32,
}

impl Host {
    /// A host with `size` bytes of zeroed memory.
    pub fn new(size: usize) -> Host {
        Host {
            mem: vec![0; size],
            pds: Vec::new(),
            mrs: Vec::new(),
            next_key: 0x100,
        }
    }

    /// Allocates a protection domain; returns its number.
    pub fn alloc_pd(&mut self) -> u32 {
        let pd = self.pds.len() as u32 + 1;
        self.pds.push(pd);
        pd
    }

    /// Registers `[va, va + len)` under `pd` with `access`; `None` when the range is outside
    /// the memory or the PD does not exist. Keys are distinct per registration (lkey = rkey).
    pub fn reg_mr(&mut self, pd: u32, va: u64, len: u64, access: Access) -> Option<Mr> {
        if !self.pds.contains(&pd) || va.checked_add(len)? > self.mem.len() as u64 {
            return None;
        }
        let mr = Mr::keyed(self.next_key, pd, va, len, access);
        self.next_key = self.next_key.wrapping_add(0x101);
        self.mrs.push(mr);
        Some(mr)
    }

    /// Removes the region with `lkey`; returns whether there was one.
    pub fn dereg_mr(&mut self, lkey: u32) -> bool {
        let n = self.mrs.len();
        self.mrs.retain(|m| m.lkey != lkey);
        n != self.mrs.len()
    }

    fn check(
        &self,
        key: u32,
        remote: bool,
        pd: u32,
        va: u64,
        len: u64,
        need: Access,
    ) -> Result<Mr, AccessError> {
        self.mrs
            .iter()
            .find(|m| if remote { m.rkey } else { m.lkey } == key)
            .ok_or(AccessError::BadKey)?
            .check(pd, va, len, need)
    }

    /// Checks a remote access: R_Key, PD, bounds, rights.
    pub fn check_remote(
        &self,
        rkey: u32,
        pd: u32,
        va: u64,
        len: u64,
        need: Access,
    ) -> Result<Mr, AccessError> {
        self.check(rkey, true, pd, va, len, need)
    }

    /// Checks a local access by lkey: PD, bounds, rights.
    pub fn check_local(
        &self,
        lkey: u32,
        pd: u32,
        va: u64,
        len: u64,
        need: Access,
    ) -> Result<Mr, AccessError> {
        self.check(lkey, false, pd, va, len, need)
    }

    /// The bytes at `[va, va + len)` (the caller has checked the range against an MR).
    pub fn read(&self, va: u64, len: usize) -> &[u8] {
        &self.mem[va as usize..va as usize + len]
    }

    /// Writes `data` at `va`.
    pub fn write(&mut self, va: u64, data: &[u8]) {
        self.mem[va as usize..va as usize + data.len()].copy_from_slice(data);
    }

    /// The 64-bit word at `va`, in the host's (little-endian) byte order.
    pub fn read_u64(&self, va: u64) -> u64 {
        u64::from_le_bytes(self.read(va, 8).try_into().unwrap())
    }

    /// Writes a 64-bit word at `va`, little-endian.
    pub fn write_u64(&mut self, va: u64, v: u64) {
        self.write(va, &v.to_le_bytes());
    }
}

/// QP states of the verbs state machine (SQD and SQE are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created; nothing is processed.
    Reset,
    /// Receives may be posted; nothing is processed.
    Init,
    /// Ready to receive: the responder runs.
    Rtr,
    /// Ready to send: requester and responder run.
    Rts,
    /// Failed: outstanding work is flushed, packets are dropped.
    Error,
}

/// A path MTU: payload bytes per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mtu {
    /// 256 bytes.
    M256,
    /// 512 bytes.
    M512,
    /// 1024 bytes.
    M1024,
    /// 2048 bytes.
    M2048,
    /// 4096 bytes.
    M4096,
}

impl Mtu {
    /// The MTU in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Mtu::M256 => 256,
            Mtu::M512 => 512,
            Mtu::M1024 => 1024,
            Mtu::M2048 => 2048,
            Mtu::M4096 => 4096,
        }
    }
}

/// The QP attributes the transport uses.
///
/// Time: the model counts abstract ticks and this crate's transport takes **one tick as one
/// microsecond**, so the IBA codes below convert with [`QpAttr::ack_timeout_ticks`] and
/// [`super::rnr_timer_us`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpAttr {
    /// QP number of the peer.
    pub dest_qpn: u32,
    /// Peer IP address (same family as the node's).
    pub dest_ip: IpAddr,
    /// Peer MAC address.
    pub dest_mac: [u8; 6],
    /// Path MTU.
    pub mtu: Mtu,
    /// First PSN the requester sends (24 bits).
    pub sq_psn: u32,
    /// First PSN the responder expects (24 bits).
    pub rq_psn: u32,
    /// Local ACK timeout code (5 bits): 4.096 µs × 2^timeout; 0 disables the timer.
    pub timeout: u8,
    /// Retries after a timeout or sequence NAK before the WR fails (3 bits; 7 is seven).
    pub retry_cnt: u8,
    /// Retries after RNR NAKs (3 bits; 7 is forever).
    pub rnr_retry: u8,
    /// RNR timer code the responder sends in its RNR NAKs.
    pub min_rnr_timer: u8,
    /// UDP source port of the QP's frames.
    pub src_port: u16,
}

impl QpAttr {
    /// Attributes towards `dest_qpn` at `dest_ip`/`dest_mac` with MTU 1024, PSNs 0, timeout
    /// code 4 (66 µs), retry_cnt 7, rnr_retry 7 and RNR timer code 1 (10 µs).
    pub fn new(dest_qpn: u32, dest_ip: IpAddr, dest_mac: [u8; 6]) -> QpAttr {
        QpAttr {
            dest_qpn,
            dest_ip,
            dest_mac,
            mtu: Mtu::M1024,
            sq_psn: 0,
            rq_psn: 0,
            timeout: 4,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            src_port: 0xC000,
        }
    }

    /// The local ACK timeout in ticks (µs), rounded up; `None` when disabled.
    pub fn ack_timeout_ticks(&self) -> Option<u64> {
        match self.timeout & 0x1F {
            0 => None,
            t => Some((4096u64 << t).div_ceil(1000)),
        }
    }
}

/// Why a `modify` or a post was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpError {
    /// The transition is not in the state machine.
    IllegalTransition {
        /// State the QP is in.
        from: QpState,
        /// State asked for.
        to: QpState,
    },
    /// RTR needs the attributes (remote QPN, path, PSNs).
    MissingAttributes,
    /// The peer's IP family differs from the node's.
    AddressFamily,
    /// The QP is not in a state that accepts this work request.
    WrongState(QpState),
    /// The local buffer of a work request fails the MR checks.
    LocalAccess(AccessError),
    /// An atomic's local or remote address is not 8-byte aligned, or its length is not 8.
    Misaligned,
}

impl fmt::Display for QpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for QpError {}

/// Whether `from → to` is a legal `modify` (verbs: RESET→INIT→RTR→RTS, any → RESET or
/// ERROR, INIT→INIT and RTS→RTS to change attributes).
pub fn legal_transition(from: QpState, to: QpState) -> bool {
    use QpState::*;
    matches!(
        (from, to),
        (Reset, Init)
            | (Init, Init)
            | (Init, Rtr)
            | (Rtr, Rts)
            | (Rts, Rts)
            | (_, Reset)
            | (_, Error)
    )
}
