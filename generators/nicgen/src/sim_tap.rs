//! Linux through the RTL: the whole NIC between two TAP devices.
//!
//! ```text
//!  netns A: wire TAP <--(frames)--> NIC MAC side (s_axis_mac_rx / m_axis_mac_tx, FCS added/checked)
//!  netns B: host TAP <--(frames + virtio-net header)--> sw-driver NetDev <--> NIC host side
//! ```
//!
//! The host TAP carries the kernel's virtio-net header (the 24-byte form with the UDP-tunnel
//! offsets) and offers checksum offload, TSO over IPv4 and IPv6 and UDP-tunnel GSO
//! (`TUN_F_CSUM`, `TUN_F_TSO4|6`, `TUN_F_UDP_TUNNEL_GSO[_CSUM]`), as a NIC with these
//! offloads offers them to its kernel (`host_sends`):
//!
//! - a GSO super-frame (plain TCP, or TCP in a UDP tunnel at the header's outer transport
//!   offset) goes as LSO WQEs: the NIC segments it (split by the driver into sends of whole
//!   segments when it is longer than the device's largest send);
//! - a frame with `NEEDS_CSUM` goes with the L4 checksum request when that is the checksum at
//!   the frame's outermost L4 header; an inner TCP checksum of a tunnel goes as LSO of one
//!   segment (the segmentation writes every checksum); any other is computed in software;
//! - a frame the NIC received with its TCP/UDP checksum verified goes up with `DATA_VALID`.
//!
//! So two network namespaces talk through the whole generated NIC: ping, TCP, anything. With
//! `--vxlan`, the NIC's own engines carry the host side over VXLAN: encapsulation context 0 on
//! every send queue, and the VNI steered to the host's queue on receive (de-capsulated).
//!
//! Each TAP is opened inside its namespace: a thread of its own enters the namespace
//! (`setns` on `/var/run/netns/NAME`, what `ip netns add NAME` makes), opens `/dev/net/tun`
//! there and returns to the original namespace; the open TAP stays bound to the namespace it
//! was made in. A TAP that already exists there (a persistent one, `ip tuntap add`, with its
//! addresses and routes) is attached to and stays when the run ends; one that does not is
//! created, and since it is not persistent the kernel removes it when the program exits. The
//! loop stops on SIGINT/SIGTERM or after the given time.

use crate::failure::Failure;
use crate::sim_loopback::nic_model_with;
use crate::trace::Trace;
use crate::wire::{MacWire, WireCapture};
use anyhow::{anyhow, bail, Context, Result};
use nicgen_driver::device::{Device, InnerOffload, RssEnables, TunnelKind};
use nicgen_driver::hw::Interrupts;
use nicgen_driver::lso::{LsoRequest, LsoTunnel};
use nicgen_driver::netdev::{Completion, NetDev, NetDevConfig, TxOffload};
use nicgen_hdl::preset::Preset;
use nicgen_host::{HostConfig, SimHost};
use nicgen_model::encap::{EncapContext, EncapKind};
use nicgen_model::toeplitz::MICROSOFT_KEY;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The virtio-net header with the UDP-tunnel fields (`struct virtio_net_hdr_v1_hash_tunnel`):
/// flags, gso_type, hdr_len, gso_size, csum_start, csum_offset (the legacy 10 bytes),
/// num_buffers, hash value and report, padding, then `outer_th_offset` (the outer UDP header)
/// and `inner_nh_offset` (the inner IP header) at bytes 20 and 22. The kernel hands
/// UDP-tunnel GSO frames only to a TAP whose header has room for them.
const VNET_HDR: usize = 24;
/// virtio-net header flags (`VIRTIO_NET_HDR_F_*`).
const VNET_F_NEEDS_CSUM: u8 = 1;
const VNET_F_DATA_VALID: u8 = 2;
/// `gso_type` values (`VIRTIO_NET_HDR_GSO_*`): TCP over IPv4 or IPv6, and the UDP-tunnel bits
/// (the outer IP version), and ECN.
const VNET_GSO_TCPV4: u8 = 1;
const VNET_GSO_TCPV6: u8 = 4;
const VNET_GSO_UDP_TUNNEL: u8 = 0x20 | 0x40;
const VNET_GSO_ECN: u8 = 0x80;
/// Offloads a TAP takes (`TUN_F_*`): checksums, TSO over IPv4 and IPv6, and TSO inside UDP
/// tunnels, with or without an outer UDP checksum (Linux 6.17 on; `libc` does not name them
/// yet). Linux's `vxlan` device hands its super-frames on only when both tunnel bits are
/// offered.
const TUN_F_UDP_TUNNEL_GSO: libc::c_uint = 0x080 | 0x100;
/// Header flag `VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM`: the outer UDP checksum is to be computed.
const VNET_F_UDP_TUNNEL_CSUM: u8 = 8;
const TAP_OFFLOADS: libc::c_uint = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
/// Where `ip netns add NAME` keeps its namespaces.
const NETNS_DIR: &str = "/var/run/netns";

/// A TAP named on the command line: `NAME` or `NAME@NETNS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapSpec {
    /// The interface name (1 to 15 bytes).
    pub name: String,
    /// The network namespace (`ip netns` name); `None`: this process's.
    pub netns: Option<String>,
}

impl std::fmt::Display for TapSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.netns {
            Some(ns) => write!(f, "`{}` in namespace `{ns}`", self.name),
            None => write!(f, "`{}`", self.name),
        }
    }
}

/// Parse `NAME[@NETNS]`; a bad name or namespace is bad input.
pub fn parse_tap_arg(s: &str) -> Result<TapSpec> {
    let (name, netns) = match s.split_once('@') {
        Some((n, ns)) if !ns.is_empty() => (n, Some(ns.to_string())),
        Some(_) => bail!("`{s}`: the namespace after `@` is empty (use NAME or NAME@NETNS)"),
        None => (s, None),
    };
    // The kernel's rule for interface names (dev_valid_name).
    let bad_name = name.is_empty()
        || name.len() > 15
        || name == "."
        || name == ".."
        || name.contains(|c: char| c == '/' || c == ':' || c.is_whitespace());
    if bad_name {
        bail!("`{s}`: `{name}` is not an interface name (1 to 15 bytes, no `/`, `:` or spaces)");
    }
    if let Some(ns) = &netns {
        if ns == "." || ns == ".." || ns.contains('/') {
            bail!("`{s}`: `{ns}` is not a network namespace name (see `ip netns list`)");
        }
    }
    Ok(TapSpec {
        name: name.to_string(),
        netns,
    })
}

/// A TAP device, open for frames.
pub struct Tap {
    file: File,
    /// Which TAP.
    pub spec: TapSpec,
    vnet: bool,
    /// This program created it (and the kernel removes it when the program exits); `false`:
    /// it existed and stays.
    pub created: bool,
    /// The kernel took UDP-tunnel GSO (`TUN_F_UDP_TUNNEL_GSO`) besides TSO.
    pub tunnel_gso: bool,
}

/// `TUNSETIFF` with `flags` for interface `name`.
fn set_iff(fd: libc::c_int, name: &str, flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
        *d = *s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = flags as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq it is given.
    if unsafe { libc::ioctl(fd, libc::TUNSETIFF, &mut req as *mut libc::ifreq) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A TAP error: no permission is the environment's, anything else the input's.
fn tap_error(e: std::io::Error, what: String) -> anyhow::Error {
    let msg = anyhow!("{what}: {e}");
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            Failure::environment(msg.context("this needs root (CAP_NET_ADMIN)")).into()
        }
        _ => Failure::input(msg).into(),
    }
}

impl Tap {
    /// Open TAP `spec` inside its namespace: attach to it if it exists, else create it. With
    /// `vnet`, frames carry the virtio-net header and the kernel may leave L4 checksums to us.
    pub fn open(spec: &TapSpec, vnet: bool) -> Result<Tap> {
        in_netns(spec.netns.as_deref(), || Tap::open_here(spec, vnet))
    }

    /// Open TAP `spec.name` in this thread's namespace.
    fn open_here(spec: &TapSpec, vnet: bool) -> Result<Tap> {
        let name = spec.name.as_str();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| {
                Failure::environment(anyhow!(
                    "cannot open /dev/net/tun: {e} (load the tun module, `modprobe tun`, and run as root)"
                ))
            })?;
        let fd = file.as_raw_fd();
        let flags = libc::IFF_TAP | libc::IFF_NO_PI | if vnet { libc::IFF_VNET_HDR } else { 0 };
        // A new TAP first (IFF_TUN_EXCL); EBUSY says one of that name exists: attach to it.
        let created = match set_iff(fd, name, flags | libc::IFF_TUN_EXCL) {
            Ok(()) => true,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                set_iff(fd, name, flags).map_err(|e| {
                    let why = match e.raw_os_error() {
                        Some(libc::EINVAL) => "it exists and is not a TAP device",
                        Some(libc::EBUSY) => "it exists and another program has it open",
                        _ => "it exists",
                    };
                    tap_error(e, format!("cannot attach to TAP {spec} ({why})"))
                })?;
                false
            }
            Err(e) => return Err(tap_error(e, format!("cannot create TAP {spec}"))),
        };
        let mut tap = Tap {
            file,
            spec: spec.clone(),
            vnet,
            created,
            tunnel_gso: false,
        };
        if vnet {
            let size = VNET_HDR as libc::c_int;
            let offload = |bits: libc::c_uint| {
                // SAFETY: TUNSETOFFLOAD takes the offload bits as its argument.
                unsafe { libc::ioctl(fd, libc::TUNSETOFFLOAD, bits as libc::c_ulong) >= 0 }
            };
            // SAFETY: TUNSETVNETHDRSZ reads an int through the pointer.
            let ok =
                unsafe { libc::ioctl(fd, libc::TUNSETVNETHDRSZ, &size as *const libc::c_int) >= 0 };
            // UDP-tunnel GSO where the kernel has it; TSO and checksums everywhere.
            tap.tunnel_gso = ok && offload(TAP_OFFLOADS | TUN_F_UDP_TUNNEL_GSO);
            if !ok || !(tap.tunnel_gso || offload(TAP_OFFLOADS)) {
                let e = std::io::Error::last_os_error();
                return Err(tap_error(
                    e,
                    format!("TAP {spec}: cannot set the virtio-net header or the offloads"),
                ));
            }
        }
        Ok(tap)
    }

    /// The next frame, if one is waiting: its virtio-net header (zero without `vnet`) and bytes.
    pub fn read(&mut self) -> Result<Option<([u8; VNET_HDR], Vec<u8>)>> {
        let mut buf = vec![0u8; 65536];
        match self.file.read(&mut buf) {
            Ok(n) => {
                let h = if self.vnet { VNET_HDR } else { 0 };
                if n < h {
                    return Ok(None);
                }
                let mut hdr = [0u8; VNET_HDR];
                hdr[..h].copy_from_slice(&buf[..h]);
                Ok(Some((hdr, buf[h..n].to_vec())))
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(anyhow!("reading TAP {}: {e}", self.spec)),
        }
    }

    /// Write a frame (with a virtio-net header whose only flag is `flags`, when `vnet`).
    pub fn write(&mut self, flags: u8, frame: &[u8]) -> Result<()> {
        let mut b = Vec::with_capacity(VNET_HDR + frame.len());
        if self.vnet {
            let mut h = [0u8; VNET_HDR];
            h[0] = flags;
            b.extend_from_slice(&h);
        }
        b.extend_from_slice(frame);
        match self.file.write(&b) {
            Ok(_) => Ok(()),
            // A TAP that is down (or full) drops the frame, as a cable would.
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EIO) => Ok(()),
            Err(e) => Err(anyhow!("writing TAP {}: {e}", self.spec)),
        }
    }

    /// How the run leaves this TAP, for the log: `created` or `attached`.
    pub fn origin(&self) -> &'static str {
        if self.created {
            "created"
        } else {
            "attached"
        }
    }
}

impl Drop for Tap {
    /// A TAP that existed before the run gets its checksum offload back off, so whoever opens
    /// it next without a virtio-net header gets complete checksums. (A created TAP goes away
    /// with its file.)
    fn drop(&mut self) {
        if self.vnet && !self.created {
            // SAFETY: TUNSETOFFLOAD takes the offload bits as its argument.
            unsafe {
                libc::ioctl(
                    self.file.as_raw_fd(),
                    libc::TUNSETOFFLOAD,
                    0 as libc::c_ulong,
                )
            };
        }
    }
}

/// Run `f` inside network namespace `ns` (`/var/run/netns/NS`); `None` runs it here. A thread of
/// its own enters the namespace, runs `f` and returns to the namespace it started in, so the
/// rest of the program never runs in `ns`.
fn in_netns<T: Send>(ns: Option<&str>, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let Some(ns) = ns else {
        return f();
    };
    let path = Path::new(NETNS_DIR).join(ns);
    let target = File::open(&path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Failure::input(anyhow!(
            "network namespace `{ns}` does not exist ({} is missing); create it with `ip netns add {ns}`",
            path.display()
        )),
        ErrorKind::PermissionDenied => {
            Failure::environment(anyhow!("cannot open {}: {e} (run as root)", path.display()))
        }
        _ => Failure::input(anyhow!("cannot open {}: {e}", path.display())),
    })?;
    let enter = |fd: &File, what: &str| -> Result<()> {
        // SAFETY: setns takes a namespace file descriptor and a namespace type.
        if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
            let e = std::io::Error::last_os_error();
            return Err(tap_error(e, format!("cannot enter {what}")));
        }
        Ok(())
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let home = File::open("/proc/thread-self/ns/net")
                .context("cannot open /proc/thread-self/ns/net")
                .map_err(Failure::environment)?;
            enter(&target, &format!("network namespace `{ns}`"))?;
            let r = f();
            enter(&home, "the original network namespace")?;
            r
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// What a run did: frames per direction and what became of the TAPs.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TapCounts {
    /// From the host TAP, sent by the driver, out on the wire TAP.
    pub host_to_wire: u64,
    /// From the wire TAP, received by the driver, up the host TAP.
    pub wire_to_host: u64,
    /// Frames the NIC dropped on receive (bad FCS, runt, no buffer...).
    pub rx_dropped: u64,
    /// Frames into the NIC's MAC (`s_axis_mac_rx`), the inbound frames of `--pcap-wire`.
    pub wire_rx_frames: u64,
    /// Frames out of the NIC's MAC (`m_axis_mac_tx`), the outbound frames of `--pcap-wire`.
    pub wire_tx_frames: u64,
    /// The wire TAP was created by this run (and is gone after it); `false`: it existed and
    /// stays.
    pub wire_tap_created: bool,
    /// The same for the host TAP.
    pub host_tap_created: bool,
    /// Frames from the host TAP whose checksum request the NIC cannot place (its L4 checksum
    /// is the one at the frame's outermost L4 header; the kernel asked for another, e.g. the
    /// inner TCP checksum of a frame its own `vxlan` device encapsulated): the driver
    /// computed that checksum in software before sending, as Linux's `skb_checksum_help`.
    pub csum_in_software: u64,
    /// The kernel took UDP-tunnel GSO on the host TAP (`TUN_F_UDP_TUNNEL_GSO`), besides TSO.
    pub tunnel_gso_offered: bool,
    /// GSO super-frames from the host TAP sent as LSO: plain TCP, and TCP inside UDP tunnels.
    pub lso_sends: u64,
    pub lso_tunnel_sends: u64,
    /// LSO WQEs those took: a super-frame longer than the device's largest send goes as
    /// several, each of whole segments.
    pub lso_wqes: u64,
    /// Frames with a checksum request for the inner TCP header of a tunnel, sent as LSO of one
    /// segment so that the NIC's segmentation writes every checksum.
    pub inner_csum_by_lso: u64,
    /// GSO super-frames the NIC cannot segment (not TCP, or headers it does not parse):
    /// segmented here in software, with the golden model.
    pub gso_in_software: u64,
    /// Frames the driver could not send in any form (counted, not silently lost).
    pub host_frames_dropped: u64,
    /// Cycles the NIC was simulated for, and the run's wall-clock seconds.
    pub sim_cycles: u64,
    pub seconds: f64,
}

/// What the driver needs to plan a host frame's sends.
struct SendPlan {
    /// The parser's window (where the NIC finds the L4 checksum).
    window: usize,
    /// The largest send, bytes.
    max_len: usize,
    /// The largest LSO send, bytes (longer super-frames are split into sends of whole
    /// segments).
    max_lso: usize,
    /// The largest LSO mss (0: no TSO).
    max_mss: usize,
}

/// The sends of one frame from the host TAP, by its virtio-net header: a GSO super-frame as
/// LSO WQEs (plain TCP, or TCP in a UDP tunnel at the header's outer transport offset), else
/// the frame with its checksum request placed ([`place_csum`]), or, for an inner TCP
/// checksum of a tunnel, as LSO of one segment.
fn host_sends(
    h: &[u8; VNET_HDR],
    mut f: Vec<u8>,
    plan: &SendPlan,
    counts: &mut TapCounts,
) -> Vec<(Vec<u8>, TxOffload)> {
    let be16 = |f: &[u8], at: usize| f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let le16 = |at: usize| u16::from_le_bytes([h[at], h[at + 1]]);
    let gso = h[1] & !VNET_GSO_ECN;
    let tunnel = gso & VNET_GSO_UDP_TUNNEL != 0;
    if matches!(gso & !VNET_GSO_UDP_TUNNEL, VNET_GSO_TCPV4 | VNET_GSO_TCPV6) {
        let mss = le16(4);
        // A tunnel's VXLAN port is the outer UDP header's destination port.
        let port = if tunnel {
            be16(&f, usize::from(le16(20)) + 2).unwrap_or(0)
        } else {
            nicgen_model::tunnel::TunnelConfig::default().vxlan_port
        };
        // An outer UDP checksum to compute: the NIC's segmentation computes one that is not 0.
        let outer_csum = usize::from(le16(20)) + 6;
        if tunnel && h[0] & VNET_F_UDP_TUNNEL_CSUM != 0 && be16(&f, outer_csum) == Some(0) {
            f[outer_csum..outer_csum + 2].copy_from_slice(&[0xFF, 0xFF]);
        }
        let lso = LsoRequest::for_frame(&f, mss, port)
            .ok()
            .filter(|_| usize::from(mss) <= plan.max_mss)
            .and_then(|r| r.split(&f, plan.max_lso).ok().map(|parts| (r, parts)));
        if let Some((r, parts)) = lso {
            counts.lso_sends += u64::from(!tunnel);
            counts.lso_tunnel_sends += u64::from(tunnel);
            counts.lso_wqes += parts.len() as u64;
            let off = TxOffload {
                lso: Some(r),
                ..TxOffload::default()
            };
            return parts.into_iter().map(|p| (p, off)).collect();
        }
        let cfg = nicgen_model::tunnel::TunnelConfig {
            vxlan_port: port,
            ..Default::default()
        };
        return match nicgen_model::tso::tso(&f, usize::from(mss), &cfg) {
            Ok(segs) => {
                counts.gso_in_software += 1;
                segs.into_iter()
                    .map(|s| (s, TxOffload::default()))
                    .collect()
            }
            Err(_) => {
                counts.host_frames_dropped += 1;
                Vec::new()
            }
        };
    }
    if h[0] & VNET_F_NEEDS_CSUM != 0 && !nic_places_csum(h, &f, plan.window) {
        // An inner TCP checksum: the NIC's segmentation writes it, as one segment.
        let p = nicgen_model::parse::parse_headers(&f, plan.window);
        let port = be16(&f, usize::from(p.l4_off) + 2).unwrap_or(0);
        let start = usize::from(le16(6));
        if let Ok(r) = LsoRequest::for_frame(&f, 1, port) {
            let payload = f.len() - r.headers.hdr_len;
            if r.headers.tunnel != LsoTunnel::None
                && r.headers.l4 == start
                && (1..=plan.max_mss).contains(&payload)
            {
                counts.inner_csum_by_lso += 1;
                let off = TxOffload {
                    lso: Some(LsoRequest {
                        mss: payload as u16,
                        ..r
                    }),
                    ..TxOffload::default()
                };
                return vec![(f, off)];
            }
        }
    }
    let (csum, soft) = place_csum(h, &mut f, plan.window);
    counts.csum_in_software += u64::from(soft);
    vec![(
        f,
        TxOffload {
            csum_l4: csum,
            ..TxOffload::default()
        },
    )]
}

/// The NIC's L4 checksum request covers the header's: the checksum field asked for is the one
/// at the frame's outermost TCP/UDP header.
fn nic_places_csum(h: &[u8; VNET_HDR], f: &[u8], window: usize) -> bool {
    let start = usize::from(u16::from_le_bytes([h[6], h[7]]));
    let field = start + usize::from(u16::from_le_bytes([h[8], h[9]]));
    let p = nicgen_model::parse::parse_headers(f, window);
    let at = match p.l4 {
        nicgen_model::parse::L4_TCP => Some(start + 16),
        nicgen_model::parse::L4_UDP => Some(start + 6),
        _ => None,
    };
    usize::from(p.l4_off) == start && at == Some(field)
}

/// The checksum request of a virtio-net header (`NEEDS_CSUM`: the ones'-complement sum of
/// `frame[csum_start..]`, whose checksum field the kernel seeded with the pseudo-header sum,
/// goes at `csum_start + csum_offset`), as the NIC's L4 request when that is where the NIC's
/// parser puts the L4 checksum, else done here in software. Returns whether the NIC should
/// compute the L4 checksum, and whether the software did.
fn place_csum(h: &[u8; VNET_HDR], f: &mut [u8], window: usize) -> (bool, bool) {
    if h[0] & VNET_F_NEEDS_CSUM == 0 {
        return (false, false);
    }
    if nic_places_csum(h, f, window) {
        return (true, false);
    }
    let start = usize::from(u16::from_le_bytes([h[6], h[7]]));
    let field = start + usize::from(u16::from_le_bytes([h[8], h[9]]));
    if field + 2 > f.len() || start >= f.len() {
        return (false, false); // a request outside the frame: sent as it is
    }
    // A computed 0 goes out as 0xFFFF (Linux's CSUM_MANGLED_0: 0 would mean "no checksum"
    // to UDP over IPv4).
    let c = match !nicgen_model::checksum::sum(&f[start..]) {
        0 => 0xFFFF,
        c => c,
    };
    f[field..field + 2].copy_from_slice(&c.to_be_bytes());
    (false, true)
}

/// Run the NIC between the two TAPs until a signal or `seconds` (if given). The TAPs are
/// opened before the (possibly minutes-long) model build, so a missing namespace or permission
/// shows at once; a line on stderr saying `running` marks when frames start to move. With
/// `trace` the model is built with tracing and its run dumps the trace's window.
pub fn run_tap(
    p: &Preset,
    wire: &TapSpec,
    host: &TapSpec,
    seconds: Option<u64>,
    pcap_wire: Option<&Path>,
    vxlan: Option<&EncapContext>,
    trace: Option<&Trace>,
) -> Result<TapCounts> {
    if wire.name == host.name && wire.netns == host.netns {
        return Err(Failure::input(anyhow!("the wire and host TAPs are the same ({wire})")).into());
    }
    let mut wire_tap = Tap::open(wire, false)?;
    let mut host_tap = Tap::open(host, true)?;
    let capture = match pcap_wire {
        Some(path) => Some(
            WireCapture::create(path, p.clock_mhz)
                .map_err(|e| Failure::input(anyhow!("cannot write --pcap-wire {e}")))?,
        ),
        None => None,
    };
    let model = crate::trace::model(trace, |t| nic_model_with(p, t))?;
    eprintln!(
        "nicgen: sim tap running: wire TAP {} ({}), host TAP {} ({}); stop with SIGINT or SIGTERM",
        wire_tap.spec,
        wire_tap.origin(),
        host_tap.spec,
        host_tap.origin()
    );
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut sh = SimHost::new(model.instance(), HostConfig::from_seed(1))?;
    let mac = sh.add_agent(MacWire::new(sh.sim(), 1, false, capture)?);
    sh.reset(4)?;
    let mut dev = Device::open(sh)?;
    dev.set_loopback(false)?;
    let table = vec![0u16; p.rss.table_size as usize];
    dev.program_rss(&MICROSOFT_KEY, RssEnables::ALL, &table)?;
    // With `--vxlan` the NIC's engines carry the host side over the overlay: context 0 on
    // every send queue, and the VNI's frames from the wire de-capsulated onto queue 0.
    if let Some(c) = vxlan {
        let EncapKind::Vxlan { vni, dst_port, .. } = c.kind else {
            bail!("--vxlan takes a VXLAN context");
        };
        dev.program_encap(0, &crate::tx_opts::driver_ctx(c))
            .map_err(|e| Failure::input(anyhow!("--vxlan: {e}")))?;
        dev.program_tunnels(
            dst_port,
            false,
            InnerOffload::NONE,
            &[(TunnelKind::Vxlan, vni, 0)],
        )
        .map_err(|e| Failure::input(anyhow!("--vxlan: {e}")))?;
    }
    let mut nd = NetDev::new(
        dev,
        NetDevConfig {
            queues: 1,
            sq_log_size: 8,
            rq_log_size: 7,
            eq_log_size: 8,
            rx_buf_size: (p.mtu as usize + 22).next_multiple_of(64),
            // LSO sends up to the device's largest frame.
            tx_buf_size: (p.mtu as usize + 22).next_multiple_of(64),
            tx_encap: vxlan.map(|_| 0),
            ..NetDevConfig::default()
        },
    )
    .map_err(|e| anyhow!("{e}"))?;
    let start = Instant::now();
    let mut counts = TapCounts {
        wire_tap_created: wire_tap.created,
        host_tap_created: host_tap.created,
        ..TapCounts::default()
    };
    let plan = SendPlan {
        window: p.parser.window as usize,
        max_len: nd.max_frame(),
        max_lso: nd.device().info().max_lso(),
        max_mss: nd.device().info().max_mss.into(),
    };
    counts.tunnel_gso_offered = host_tap.tunnel_gso;
    let mut pending: std::collections::VecDeque<(Vec<u8>, TxOffload)> = Default::default();
    while !STOP.load(Ordering::SeqCst)
        && seconds.is_none_or(|s| start.elapsed() < Duration::from_secs(s))
    {
        let mut busy = false;
        // Host TAP -> driver (checksum requests from the virtio-net header).
        for _ in 0..16 {
            if pending.is_empty() {
                if let Some((h, f)) = host_tap.read()? {
                    pending.extend(host_sends(&h, f, &plan, &mut counts));
                }
            }
            let Some((f, off)) = pending.pop_front() else {
                break;
            };
            busy = true;
            let limit = match off.lso {
                Some(_) => plan.max_lso,
                None => plan.max_len,
            };
            if f.len() < 14 || f.len() > limit {
                // Not a frame this NIC sends, as a NIC would refuse it.
                counts.host_frames_dropped += 1;
                continue;
            }
            match nd.send(0, &f, off) {
                Ok(_) => {}
                Err(nicgen_driver::netdev::Error::QueueFull { .. }) => {
                    pending.push_front((f, off));
                    break;
                }
                Err(e) => bail!("sending a frame from TAP {}: {e}", host_tap.spec),
            }
        }
        // Wire TAP -> MAC RX (with FCS).
        let hw = nd.device().backend();
        while let Some((_, mut f)) = wire_tap.read()? {
            // On a real wire the sender's MAC pads short frames; a TAP hands them over
            // unpadded.
            if f.len() < 60 {
                f.resize(60, 0);
            }
            nicgen_model::crc32::append_fcs(&mut f);
            hw.agent_mut(mac).expect("agent").push_rx(f);
            busy = true;
        }
        // Time passes in the simulated NIC.
        hw.run(256).map_err(|e| anyhow!("{e}"))?;
        // MAC TX -> wire TAP (FCS checked and removed).
        let out = hw.agent_mut(mac).expect("agent").take_tx();
        for mut f in out {
            if f.len() >= 4 && nicgen_model::crc32::check_fcs(&f) {
                f.truncate(f.len() - 4);
                wire_tap.write(0, &f)?;
                counts.host_to_wire += 1;
            }
            busy = true;
        }
        // Driver -> host TAP.
        for c in nd.poll(0).map_err(|e| anyhow!("{e}"))? {
            match c {
                Completion::Rx(r) => {
                    let flags = if r.l4_ok { VNET_F_DATA_VALID } else { 0 };
                    host_tap.write(flags, &r.data)?;
                    counts.wire_to_host += 1;
                    busy = true;
                }
                Completion::Tx { .. } => {}
                Completion::Error { syndrome, .. } => {
                    nd.reset_queue_after_error(0).map_err(|e| anyhow!("{e}"))?;
                    eprintln!("nicgen: a WQE failed ({syndrome:?}); queue reset");
                }
            }
        }
        if !busy {
            std::thread::sleep(Duration::from_micros(200));
            nd.device().backend().relax();
        }
    }
    counts.sim_cycles = nd.device().backend().cycles();
    counts.seconds = start.elapsed().as_secs_f64();
    let mac = nd.device().backend().agent_mut(mac).expect("agent");
    counts.wire_rx_frames = mac.counts().rx_frames;
    counts.wire_tx_frames = mac.counts().tx_frames;
    mac.finish()
        .map_err(|e| Failure::input(anyhow!("cannot write --pcap-wire {e}")))?;
    let st = nd.device().stats();
    eprintln!("nicgen: counters {:?}", st.named());
    counts.rx_dropped = st.rx_drop_runt
        + st.rx_drop_oversize
        + st.rx_drop_fcs
        + st.rx_drop_mac_control
        + st.rx_no_wqe;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use nicgen_driver::lso::LsoRequest;
    use nicgen_model::encap::{encap, EncapKind};
    use nicgen_model::tcp::Flags;
    use nicgen_model::tso::tso;
    use nicgen_model::vectors::overlay::{ctx, pattern, tcp_frame, Ip, NVGRE};

    /// A super-frame the driver splits into sends of whole segments (plain, VXLAN, NVGRE;
    /// IPv4 and IPv6) segments, part by part, into exactly the whole one's segments.
    #[test]
    fn a_split_lso_send_segments_as_the_whole() {
        let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::CWR.0 | Flags::FIN.0);
        for (kind, v6) in [
            (None, false),
            (None, true),
            (Some(EncapKind::vxlan(42)), true),
            (Some(NVGRE), false),
        ] {
            let plain = tcp_frame(
                Ip { v6, ident: 0xFFF0 },
                false,
                0xFFFF_0000,
                flags,
                &pattern(30_000),
            );
            let f = match kind {
                Some(k) => encap(&plain, &ctx(!v6, false, k), 0xFFFE).unwrap(),
                None => plain,
            };
            let r = LsoRequest::for_frame(&f, 1448, 4789).unwrap();
            let parts = r.split(&f, 9022).unwrap();
            assert!(parts.len() == 4 && parts.iter().all(|p| p.len() <= 9022));
            let cfg = Default::default();
            let pieces: Vec<Vec<u8>> = parts
                .iter()
                .flat_map(|p| tso(p, 1448, &cfg).unwrap())
                .collect();
            assert!(pieces == tso(&f, 1448, &cfg).unwrap(), "{kind:?} v6 {v6}");
        }
        let r = LsoRequest::for_frame(&pattern_frame(), 9000, 4789).unwrap();
        assert!(
            r.split(&pattern_frame(), 9022).is_err(),
            "a segment past the limit"
        );
    }

    fn pattern_frame() -> Vec<u8> {
        tcp_frame(
            Ip {
                v6: false,
                ident: 1,
            },
            false,
            1,
            Flags::ACK,
            &pattern(20_000),
        )
    }
}
