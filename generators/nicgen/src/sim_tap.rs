//! Linux through the RTL: the whole NIC between two TAP devices.
//!
//! ```text
//!  netns A: wire TAP <--(frames)--> NIC MAC side (s_axis_mac_rx / m_axis_mac_tx, FCS added/checked)
//!  netns B: host TAP <--(frames + virtio-net header)--> sw-driver NetDev <--> NIC host side
//! ```
//!
//! The host TAP carries the kernel's virtio-net header: a frame the kernel sends with
//! `NEEDS_CSUM` (checksum offload, `TUN_F_CSUM`) goes to the NIC with the L4 checksum request;
//! a frame the NIC received with its TCP/UDP checksum verified goes up with `DATA_VALID`. So two
//! network namespaces talk through the whole generated NIC: ping, TCP, anything.
//!
//! TAPs are created (or attached to, when one of that name exists in this namespace) here and
//! moved into the named namespace with `ip link set ... netns`; they vanish when the program
//! exits. The loop stops on SIGINT/SIGTERM or after the given time.

use crate::failure::Failure;
use crate::sim_loopback::nic_model;
use anyhow::{anyhow, bail, Context, Result};
use nicgen_driver::device::{Device, RssEnables};
use nicgen_driver::hw::Interrupts;
use nicgen_driver::netdev::{Completion, NetDev, NetDevConfig, TxOffload};
use nicgen_hdl::preset::Preset;
use nicgen_host::{HostConfig, SimHost};
use nicgen_model::toeplitz::MICROSOFT_KEY;
use nicgen_tb::stream::{StreamDriver, StreamPorts, StreamSink};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUN_F_CSUM: libc::c_ulong = 0x01;
/// The legacy virtio-net header: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset.
const VNET_HDR: usize = 10;
const VNET_F_NEEDS_CSUM: u8 = 1;
const VNET_F_DATA_VALID: u8 = 2;

/// A TAP device, open for frames.
pub struct Tap {
    file: File,
    pub name: String,
    vnet: bool,
}

#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

impl Tap {
    /// Create (or attach to) TAP `name` in this namespace; with `vnet`, frames carry the
    /// virtio-net header and the kernel may leave L4 checksums to us.
    pub fn open(name: &str, vnet: bool) -> Result<Tap> {
        if name.is_empty() || name.len() > 15 {
            bail!("TAP name `{name}` must be 1 to 15 characters");
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")
            .context("cannot open /dev/net/tun (is the tun module loaded, and are you root?)")
            .map_err(Failure::environment)?;
        let mut req = IfReq {
            name: [0; 16],
            flags: IFF_TAP | IFF_NO_PI | if vnet { IFF_VNET_HDR } else { 0 },
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        let fd = file.as_raw_fd();
        // SAFETY: TUNSETIFF reads and writes an ifreq, which `req` is laid out as.
        if unsafe { libc::ioctl(fd, TUNSETIFF, &mut req as *mut IfReq) } < 0 {
            let e = std::io::Error::last_os_error();
            let msg =
                anyhow!("cannot create or attach TAP `{name}`: {e} (need root or CAP_NET_ADMIN)");
            return Err(if e.kind() == ErrorKind::PermissionDenied {
                Failure::environment(msg)
            } else {
                Failure::input(msg)
            }
            .into());
        }
        if vnet {
            let size: libc::c_int = VNET_HDR as libc::c_int;
            // SAFETY: both ioctls take a pointer to an int / an unsigned long argument.
            let ok = unsafe {
                libc::ioctl(fd, TUNSETVNETHDRSZ, &size as *const libc::c_int) >= 0
                    && libc::ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM) >= 0
            };
            if !ok {
                bail!(
                    "TAP `{name}`: cannot set the virtio-net header or checksum offload: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        Ok(Tap {
            file,
            name: name.to_string(),
            vnet,
        })
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
            Err(e) => Err(anyhow!("reading TAP `{}`: {e}", self.name)),
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
            Err(e) => Err(anyhow!("writing TAP `{}`: {e}", self.name)),
        }
    }
}

/// `NAME[@NETNS]`.
pub fn parse_tap_arg(s: &str) -> Result<(String, Option<String>)> {
    let (name, ns) = match s.split_once('@') {
        Some((n, ns)) if !ns.is_empty() => (n, Some(ns.to_string())),
        Some(_) => bail!("`{s}`: the namespace after `@` is empty (use NAME or NAME@NETNS)"),
        None => (s, None),
    };
    if name.is_empty() {
        bail!("`{s}`: the TAP name is empty (use NAME or NAME@NETNS)");
    }
    Ok((name.to_string(), ns))
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run `ip` (install iproute2)")?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Open TAP `name` and move it into namespace `ns` (which must exist: `ip netns add NS`).
fn open_in(name: &str, ns: Option<&str>, vnet: bool) -> Result<Tap> {
    let tap = Tap::open(name, vnet)?;
    if let Some(ns) = ns {
        ip(&["link", "set", "dev", name, "netns", ns]).with_context(|| {
            format!(
                "moving TAP `{name}` into namespace `{ns}` (does it exist? `ip netns add {ns}`)"
            )
        })?;
    }
    Ok(tap)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Frames moved, per direction.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TapCounts {
    /// From the host TAP, sent by the driver, out on the wire TAP.
    pub host_to_wire: u64,
    /// From the wire TAP, received by the driver, up the host TAP.
    pub wire_to_host: u64,
    /// Frames the NIC dropped on receive (bad FCS, runt, no buffer...).
    pub rx_dropped: u64,
}

/// Run the NIC between the two TAPs until a signal or `seconds` (if given).
pub fn run_tap(
    p: &Preset,
    wire: (&str, Option<&str>),
    host: (&str, Option<&str>),
    seconds: Option<u64>,
) -> Result<TapCounts> {
    let model = nic_model(p)?;
    let mut wire_tap = open_in(wire.0, wire.1, false)?;
    let mut host_tap = open_in(host.0, host.1, true)?;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut sh = SimHost::new(model.instance(), HostConfig::from_seed(1))?;
    let mac_rx = sh.add_agent(StreamDriver::new(
        StreamPorts::new(sh.sim(), "s_axis_mac_rx")?,
        1,
        0.0,
    ));
    let mac_tx = sh.add_agent(StreamSink::new(
        StreamPorts::new(sh.sim(), "m_axis_mac_tx")?,
        1,
        0.0,
    ));
    sh.reset(4)?;
    let mut dev = Device::open(sh)?;
    dev.set_loopback(false)?;
    let table = vec![0u16; p.rss.table_size as usize];
    dev.program_rss(&MICROSOFT_KEY, RssEnables::ALL, &table)?;
    let mut nd = NetDev::new(
        dev,
        NetDevConfig {
            queues: 1,
            sq_log_size: 8,
            rq_log_size: 7,
            eq_log_size: 8,
            rx_buf_size: (p.mtu as usize + 22).next_multiple_of(64),
            tx_buf_size: 1536,
            ..NetDevConfig::default()
        },
    )
    .map_err(|e| anyhow!("{e}"))?;
    let start = Instant::now();
    let mut counts = TapCounts::default();
    let mut pending: Option<(Vec<u8>, TxOffload)> = None;
    while !STOP.load(Ordering::SeqCst)
        && seconds.is_none_or(|s| start.elapsed() < Duration::from_secs(s))
    {
        let mut busy = false;
        // Host TAP -> driver (checksum requests from the virtio-net header).
        for _ in 0..16 {
            if pending.is_none() {
                pending = host_tap.read()?.map(|(h, f)| {
                    let csum = h[0] & VNET_F_NEEDS_CSUM != 0;
                    (
                        f,
                        TxOffload {
                            csum_l3: false,
                            csum_l4: csum,
                            vlan_tci: None,
                            inline_headers: false,
                        },
                    )
                });
            }
            let Some((f, off)) = pending.take() else {
                break;
            };
            busy = true;
            if f.len() < 14 || f.len() > nd.max_frame() {
                continue; // not a frame this NIC sends: dropped, as a NIC would refuse it
            }
            match nd.send(0, &f, off) {
                Ok(_) => {}
                Err(nicgen_driver::netdev::Error::QueueFull { .. }) => {
                    pending = Some((f, off));
                    break;
                }
                Err(e) => bail!("sending a frame from `{}`: {e}", host_tap.name),
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
            hw.agent_mut(mac_rx).expect("agent").push(f);
            busy = true;
        }
        // Time passes in the simulated NIC.
        hw.run(256).map_err(|e| anyhow!("{e}"))?;
        // MAC TX -> wire TAP (FCS checked and removed).
        let out = hw.agent_mut(mac_tx).expect("agent").take_frames();
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
    let st = nd.device().stats();
    eprintln!("nicgen: counters {:?}", st.named());
    counts.rx_dropped = st.rx_drop_runt
        + st.rx_drop_oversize
        + st.rx_drop_fcs
        + st.rx_drop_mac_control
        + st.rx_no_wqe;
    Ok(counts)
}
