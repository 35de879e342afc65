//! Three-way agreement of the independent oracles: scapy (`testbench/oracles/make_frames.py`
//! builds the frames and says what an RX checksum offload must report), tshark (checks the same
//! checksums with Wireshark's dissectors) and our golden model (`nicgen-model`).
//!
//! The overlay part (section (d)) does the same for tunnels: scapy builds VXLAN and NVGRE
//! frames and TCP super-frames (its script is `OVERLAY_PY` below), the tunnel model must
//! report what scapy says about them, and every frame the encapsulation and TSO models emit
//! must have the checksums and lengths scapy and tshark compute.
//!
//! No hardware here: these tests establish that the vectors the packet-pipeline tests use are
//! right, so that a disagreement there is the hardware's fault.
//!
//! Missing python3/scapy or tshark skips with a message, unless `NICGEN_REQUIRE_TOOLS=1` (CI),
//! where it fails.

use nicgen_model::checksum;
use nicgen_model::encap::{encap, EncapContext, EncapKind, OuterIp};
use nicgen_model::ethernet::{EtherType, EthernetAddress, VlanTag};
use nicgen_model::ip::IpProtocol;
use nicgen_model::rx::CsumVerdicts;
use nicgen_model::toeplitz::{hash_flow, MICROSOFT_KEY};
use nicgen_model::tso::{encap_tso, tso};
use nicgen_model::tunnel::{decap, parse_tunnel, Malformed, Steering, TunnelConfig};
use nicgen_model::{
    EthernetFrame, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, TcpPacket, UdpPacket,
};
use nicgen_tb::pcap::{read_pcap, write_pcap};
use nicgen_tb::tshark::{self, CsumStatus, ExpertSeverity, Fcs};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../oracles/make_frames.py");

/// One line of the sidecar (schema in `testbench/oracles/README.md`).
#[derive(Debug, Clone, Deserialize)]
struct Record {
    index: usize,
    kind: String,
    len: usize,
    l3: Option<String>,
    l4: Option<String>,
    fragment: bool,
    vlan: Option<Vlan>,
    l3_csum_ok: Option<bool>,
    l4_csum_ok: Option<bool>,
    csum: String,
    malformed: Option<String>,
    rss_ms: Option<Rss>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
struct Vlan {
    vid: u16,
    pcp: u8,
}

#[derive(Debug, Clone, Deserialize)]
struct Rss {
    tcp: String,
    ip: String,
}

struct Vectors {
    pcap: PathBuf,
    frames: Vec<Vec<u8>>,
    records: Vec<Record>,
}

/// Skip (false) or, under `NICGEN_REQUIRE_TOOLS=1`, fail: `nicgen_tb::require` decides.
fn missing(what: &str) -> bool {
    nicgen_tb::require::require("python3 with scapy", Err(what.to_string()))
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// `target/tmp/oracles/<pid>`; directories of test processes that have ended are removed.
fn out_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oracles");
        if Path::new("/proc/self").exists() {
            for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let pid = name.to_string_lossy();
                if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(&*pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = root.join(std::process::id().to_string());
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .clone()
}

/// Runs make_frames.py; `Err` carries why python3/scapy is unusable (a skip), a failing script
/// panics.
fn run_make_frames(seed: u64, name: &str) -> Result<(PathBuf, PathBuf), String> {
    let dir = out_dir();
    let pcap = dir.join(format!("{name}.pcap"));
    let jsonl = dir.join(format!("{name}.jsonl"));
    let seed = seed.to_string();
    let args = [
        pcap.as_os_str(),
        jsonl.as_os_str(),
        "--seed".as_ref(),
        seed.as_ref(),
    ];
    run_python(Path::new(SCRIPT), &args)?;
    Ok((pcap, jsonl))
}

/// Runs `python3 SCRIPT ARGS...`; `Err` carries why python3/scapy is unusable (the script
/// exits 3 saying "scapy is not importable": a skip), any other failure panics.
fn run_python(script: &Path, args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {} ({e})", python()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(()),
        Some(3) if stderr.contains("scapy is not importable") => Err(stderr.trim().to_string()),
        _ => panic!(
            "{} {args:?} failed ({}):\n{stderr}",
            script.display(),
            out.status
        ),
    }
}

/// The default-seed vectors, built once per test process.
fn vectors() -> Option<&'static Vectors> {
    static V: OnceLock<Result<Vectors, String>> = OnceLock::new();
    let v = V.get_or_init(|| {
        let (pcap, jsonl) = run_make_frames(1, "frames")?;
        let frames = read_pcap(&pcap).unwrap();
        let records: Vec<Record> = std::fs::read_to_string(&jsonl)
            .unwrap()
            .lines()
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("sidecar line {}: {e}", i + 1))
            })
            .collect();
        assert_eq!(
            frames.len(),
            records.len(),
            "pcap and sidecar differ in length"
        );
        for (i, (f, r)) in frames.iter().zip(&records).enumerate() {
            assert_eq!(r.index, i, "sidecar out of order");
            assert_eq!(r.len, f.len(), "frame {i} ({}): length", r.kind);
        }
        Ok(Vectors {
            pcap,
            frames,
            records,
        })
    });
    match v {
        Ok(v) => Some(v),
        Err(why) => {
            missing(why);
            None
        }
    }
}

fn hex16(s: &str) -> u16 {
    u16::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn hex32(s: &str) -> u32 {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

// ---- (b) scapy vs tshark ---------------------------------------------------------------------

#[test]
fn scapy_and_tshark_agree_on_every_checksum() {
    let Some(v) = vectors() else { return };
    if !tshark::tshark_required() {
        return;
    }
    let verdicts = tshark::check_checksums(&v.pcap).unwrap();
    assert_eq!(
        verdicts.len(),
        v.records.len(),
        "tshark saw a different frame count"
    );
    let mut errors = Vec::new();
    let (mut l3_checked, mut l4_checked, mut malformed) = (0, 0, 0);
    for (r, t) in v.records.iter().zip(&verdicts) {
        let mut fail = |what: String| {
            errors.push(format!(
                "frame {} ({}): {what}; tshark: {t:?}",
                r.index, r.kind
            ))
        };
        if r.malformed.is_some() {
            // One-sided: every frame scapy's side calls malformed, tshark finds fault with too.
            malformed += 1;
            if t.expert < Some(ExpertSeverity::Warn) {
                fail("malformed, but tshark has no warning or error".into());
            }
            continue;
        }
        let stack: Vec<&str> = t.protocols.split(':').collect();
        let has = |p: &str| stack.contains(&p);
        match r.l3.as_deref() {
            Some("ipv4") => {
                l3_checked += 1;
                let want = if r.l3_csum_ok == Some(true) {
                    CsumStatus::Good
                } else {
                    CsumStatus::Bad
                };
                if t.ip() != Some(want) || t.ip.len() != 1 {
                    fail(format!("IPv4 header checksum should be {want:?}"));
                }
                if !has("ip") {
                    fail("tshark did not decode IPv4".into());
                }
            }
            Some("ipv6") => {
                if !t.ip.is_empty() || !has("ipv6") {
                    fail("tshark did not decode IPv6 (or found an IPv4 header)".into());
                }
            }
            None => {
                if !t.ip.is_empty() || has("ip") || has("ipv6") {
                    fail("non-IP frame decoded as IP".into());
                }
            }
            Some(other) => fail(format!("unknown l3 {other}")),
        }
        let l4 = t.l4();
        match r.l4_csum_ok {
            Some(true) => {
                l4_checked += 1;
                // NotPresent: UDP over IPv4 with checksum 0, which the offload reports as ok.
                let zero_udp4 =
                    l4 == Some(CsumStatus::NotPresent) && r.l3.as_deref() == Some("ipv4");
                if !(l4 == Some(CsumStatus::Good) || zero_udp4) {
                    fail("L4 checksum should be good".into());
                }
            }
            Some(false) => {
                l4_checked += 1;
                if !l4.is_some_and(CsumStatus::is_bad) {
                    fail("L4 checksum should be bad".into());
                }
            }
            // Fragments: tshark (reassembly off) leaves a first fragment's checksum unverified.
            None => {
                if !matches!(l4, None | Some(CsumStatus::Unverified)) {
                    fail("L4 checksum should not be verifiable".into());
                }
            }
        }
        if let Some(l4) = r.l4.as_deref() {
            if !has(l4) {
                fail(format!("tshark did not decode {l4}"));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} disagreements between scapy and tshark:\n{}",
        errors.len(),
        errors.join("\n")
    );
    eprintln!(
        "scapy and tshark agree: {} frames, {l3_checked} IPv4 header and {l4_checked} TCP/UDP \
         checksum verdicts, {malformed} malformed frames",
        v.records.len()
    );
    // The set must exercise both verdicts of both checksums.
    let count = |f: &dyn Fn(&Record) -> bool| v.records.iter().filter(|r| f(r)).count();
    assert!(count(&|r| r.l3_csum_ok == Some(false)) >= 10);
    assert!(count(&|r| r.l4_csum_ok == Some(false)) >= 10);
    assert!(count(&|r| r.l4_csum_ok == Some(true)) >= 10);
    assert!(count(&|r| r.fragment) >= 10);
    assert!(malformed >= 10);
}

// ---- (c) scapy vs the golden model -----------------------------------------------------------

/// (source, destination, TCP ports) of a frame, for RSS.
type Flow = (IpAddr, IpAddr, Option<(u16, u16)>);

/// What the golden model says about a frame, in the sidecar's terms.
#[derive(Debug, Default, PartialEq)]
struct ModelView {
    l3: Option<&'static str>,
    l4: Option<&'static str>,
    fragment: bool,
    vlan: Option<Vlan>,
    tags: usize,
    l3_csum_ok: Option<bool>,
    l4_csum_ok: Option<bool>,
    csum: u16,
    malformed: bool,
    flow: Option<Flow>,
}

fn model_view(frame: &[u8]) -> ModelView {
    let eth = EthernetFrame::new_checked(frame).expect("frames are at least 60 bytes");
    let l2 = eth.header_len();
    let mut m = ModelView {
        tags: eth.tag_count(),
        vlan: eth.tag(0).map(|t| Vlan {
            vid: t.vid,
            pcp: t.pcp,
        }),
        ..ModelView::default()
    };
    let ip = &frame[l2..];
    let sum_to = |end: usize| checksum::sum(&ip[..end.min(ip.len())]);
    match eth.ethertype() {
        EtherType::Ipv4 => {
            m.l3 = Some("ipv4");
            m.csum = sum_to(usize::from(u16::from_be_bytes([ip[2], ip[3]])));
            let Ok(p) = Ipv4Packet::new_checked(ip) else {
                m.malformed = true;
                return m;
            };
            if Ipv4Repr::parse(&p).is_err() {
                m.malformed = true;
                return m;
            }
            m.l3_csum_ok = Some(p.verify_checksum());
            m.fragment = p.is_fragment();
            let (src, dst) = (IpAddr::V4(p.src_addr()), IpAddr::V4(p.dst_addr()));
            m.flow = Some((src, dst, None));
            if !m.fragment {
                l4(&mut m, p.protocol(), p.payload(), src, dst);
            }
        }
        EtherType::Ipv6 => {
            m.l3 = Some("ipv6");
            m.csum = sum_to(40 + usize::from(u16::from_be_bytes([ip[4], ip[5]])));
            let Ok(p) = Ipv6Packet::new_checked(ip) else {
                m.malformed = true;
                return m;
            };
            let Ok(ext) = Ipv6Repr::parse(&p).and_then(|_| p.ext_headers()) else {
                m.malformed = true;
                return m;
            };
            m.l3_csum_ok = Some(true);
            // An RFC 6946 atomic fragment (offset 0, M 0) is a whole datagram.
            m.fragment = ext.fragment.is_some_and(|f| f.offset != 0 || f.more_frags);
            let (src, dst) = (IpAddr::V6(p.src_addr()), IpAddr::V6(p.dst_addr()));
            m.flow = Some((src, dst, None));
            if !m.fragment {
                l4(
                    &mut m,
                    ext.upper_protocol,
                    &p.payload()[ext.len..],
                    src,
                    dst,
                );
            }
        }
        _ => m.csum = checksum::sum(ip),
    }
    m
}

fn l4(m: &mut ModelView, proto: IpProtocol, bytes: &[u8], src: IpAddr, dst: IpAddr) {
    match proto {
        IpProtocol::Tcp => {
            m.l4 = Some("tcp");
            match TcpPacket::new_checked(bytes) {
                Ok(t) => {
                    m.l4_csum_ok = Some(t.verify_checksum(src, dst));
                    m.flow = Some((src, dst, Some((t.src_port(), t.dst_port()))));
                }
                Err(_) => m.malformed = true,
            }
        }
        IpProtocol::Udp => {
            m.l4 = Some("udp");
            match UdpPacket::new_checked(bytes) {
                Ok(u) => m.l4_csum_ok = Some(u.verify_checksum(src, dst)),
                Err(_) => m.malformed = true,
            }
        }
        _ => {}
    }
}

#[test]
fn scapy_and_the_model_agree() {
    let Some(v) = vectors() else { return };
    let mut errors = Vec::new();
    let mut rss = 0;
    for (r, frame) in v.records.iter().zip(&v.frames) {
        let m = model_view(frame);
        let mut fail =
            |what: String| errors.push(format!("frame {} ({}): {what}", r.index, r.kind));
        let csum = hex16(&r.csum);
        if m.csum != csum {
            fail(format!("csum: scapy {csum:#06x}, model {:#06x}", m.csum));
        }
        if m.l3 != r.l3.as_deref() {
            fail(format!("l3: scapy {:?}, model {:?}", r.l3, m.l3));
        }
        if m.vlan != r.vlan {
            fail(format!("vlan: scapy {:?}, model {:?}", r.vlan, m.vlan));
        }
        if m.malformed != r.malformed.is_some() {
            fail(format!(
                "malformed: scapy {:?}, model {}",
                r.malformed, m.malformed
            ));
            continue;
        }
        if m.malformed {
            continue;
        }
        let model = (m.l4, m.fragment, m.l3_csum_ok, m.l4_csum_ok);
        let scapy = (r.l4.as_deref(), r.fragment, r.l3_csum_ok, r.l4_csum_ok);
        if model != scapy {
            fail(format!(
                "(l4, fragment, l3_csum_ok, l4_csum_ok): scapy {scapy:?}, model {model:?}"
            ));
        }
        if let Some(want) = &r.rss_ms {
            rss += 1;
            let (src, dst, ports) = m.flow.expect("RSS frames are TCP");
            let got_tcp = hash_flow(&MICROSOFT_KEY, src, dst, ports);
            let got_ip = hash_flow(&MICROSOFT_KEY, src, dst, None);
            if (got_tcp, got_ip) != (hex32(&want.tcp), hex32(&want.ip)) {
                fail(format!(
                    "Toeplitz: scapy/table {want:?}, model tcp {got_tcp:#010x} ip {got_ip:#010x}"
                ));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} disagreements between scapy and the model:\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert_eq!(rss, 8, "the 5 IPv4 + 3 IPv6 Microsoft RSS flows");
}

/// The RX parser's model (`nicgen_model::parse`, the reference for `eth_hdr_parse`) against the
/// sidecar, with a window covering the whole frame (so only real defects are reported).
#[test]
fn scapy_and_the_parse_model_agree() {
    use nicgen_model::parse::{parse_headers, L3_IPV4, L3_IPV6, L4_TCP, L4_UDP, MIN_WINDOW};
    let Some(v) = vectors() else { return };
    let mut errors = Vec::new();
    let mut atomic = 0;
    for (r, frame) in v.records.iter().zip(&v.frames) {
        let p = parse_headers(frame, frame.len().max(MIN_WINDOW));
        let mut fail =
            |what: String| errors.push(format!("frame {} ({}): {what}", r.index, r.kind));
        let vlan = (p.vlan_count > 0).then_some(Vlan {
            vid: p.tag0_tci & 0x0FFF,
            pcp: (p.tag0_tci >> 13) as u8,
        });
        if vlan != r.vlan {
            fail(format!("vlan: scapy {:?}, parse {vlan:?}", r.vlan));
        }
        if (p.malformed != 0) != r.malformed.is_some() {
            fail(format!(
                "malformed: scapy {:?}, parse code {}",
                r.malformed, p.malformed
            ));
            continue;
        }
        if p.malformed != 0 {
            continue;
        }
        let l3 = match p.l3 {
            L3_IPV4 => Some("ipv4"),
            L3_IPV6 => Some("ipv6"),
            _ => None,
        };
        let l4 = match p.l4 {
            L4_TCP => Some("tcp"),
            L4_UDP => Some("udp"),
            _ => None,
        };
        // RFC 6946: an IPv6 fragment header with offset 0 and M 0 ("atomic fragment") is a
        // whole datagram; Linux and tshark check its L4 checksum, the sidecar says so. The parse
        // model counts every fragment header as a fragment (no L4), which is conservative (no
        // wrong verdict, only a missing one). Known and deliberate here: if the parse model
        // changes, drop this exception.
        if r.kind.starts_with("ipv6_atomic_frag") && p.frag && l4.is_none() {
            atomic += 1;
            continue;
        }
        if (l3, l4, p.frag) != (r.l3.as_deref(), r.l4.as_deref(), r.fragment) {
            fail(format!(
                "(l3, l4, fragment): scapy {:?}, parse {:?}",
                (r.l3.as_deref(), r.l4.as_deref(), r.fragment),
                (l3, l4, p.frag)
            ));
        }
        if l3.is_some() {
            let sum = checksum::sum(&frame[usize::from(p.l3_off)..usize::from(p.ip_end)]);
            if sum != hex16(&r.csum) {
                fail(format!(
                    "sum over l3_off..ip_end {sum:#06x}, scapy csum {}",
                    r.csum
                ));
            }
        }
        if let Some(want) = &r.rss_ms {
            let addr = |a: u128| -> IpAddr {
                if p.l3 == L3_IPV4 {
                    IpAddr::from((a as u32).to_be_bytes())
                } else {
                    IpAddr::from(a.to_be_bytes())
                }
            };
            let (src, dst) = (addr(p.src_ip), addr(p.dst_ip));
            let tcp = hash_flow(&MICROSOFT_KEY, src, dst, Some((p.src_port, p.dst_port)));
            let ip = hash_flow(&MICROSOFT_KEY, src, dst, None);
            if (tcp, ip) != (hex32(&want.tcp), hex32(&want.ip)) {
                fail(format!(
                    "Toeplitz over the parsed fields: tcp {tcp:#010x} ip {ip:#010x}, want {want:?}"
                ));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} disagreements between scapy and the parse model:\n{}",
        errors.len(),
        errors.join("\n")
    );
    eprintln!("parse model: {atomic} atomic fragments taken as fragments (see the comment)");
}

#[test]
fn tshark_and_the_model_count_the_same_vlan_tags() {
    let Some(v) = vectors() else { return };
    if !tshark::tshark_required() {
        return;
    }
    let stacks = tshark::decode_summary(&v.pcap).unwrap();
    assert_eq!(stacks.len(), v.frames.len());
    for ((r, frame), stack) in v.records.iter().zip(&v.frames).zip(&stacks) {
        let tshark_tags = stack
            .split(':')
            .filter(|p| *p == "vlan" || *p == "ieee8021ad")
            .count();
        assert_eq!(
            tshark_tags,
            model_view(frame).tags,
            "frame {} ({}): {stack}",
            r.index,
            r.kind
        );
    }
}

// ---- (d) overlay tunnels: scapy vs the tunnel, encapsulation and TSO models ---------------

/// The overlay oracle, run as `python3 overlay.py build DIR SEED` (scapy-built VXLAN/NVGRE
/// frames with what the receive side must report, and TCP super-frames) and
/// `python3 overlay.py check PCAP JSONL` (every IPv4/TCP/UDP checksum and IPv4/IPv6/UDP length
/// of every frame recomputed by scapy: the field deleted, the packet rebuilt, the value
/// compared). Kept here, beside the tests that read its output.
const OVERLAY_PY: &str = r##""""Overlay oracle for nicgen's tunnel model (see testbench/tb/tests/oracles.rs).

build OUT_DIR SEED: writes tunnels.pcap/.jsonl (VXLAN/NVGRE frames and what the receive side
must report) and supers.pcap/.jsonl (TCP super-frames for TSO, with the MSS).
check PCAP JSONL: for every frame, every IPv4/TCP/UDP checksum rebuilt by scapy (field
deleted, packet rebuilt) and compared; writes one JSON line per frame.
"""
import json
import random
import sys

try:
    from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, TCP, GRE, Raw, IPOption, rdpcap, wrpcap
    from scapy.layers.vxlan import VXLAN
    from scapy.packet import NoPayload
except Exception as e:  # noqa: BLE001
    print(f"scapy is not importable: {e}", file=sys.stderr)
    sys.exit(3)


def inner_frame(rng, v6, tcp, payload):
    eth = Ether(src="02:00:00:00:00:aa", dst="02:00:00:00:00:bb")
    ip = (IPv6(src="2001:db8::1", dst="2001:db8::%x" % rng.randrange(2, 0xFFFF))
          if v6 else IP(src="10.1.1.1", dst="10.1.%d.%d" % (rng.randrange(256), rng.randrange(1, 255)),
                        id=rng.randrange(65536), flags="DF"))
    l4 = (TCP(sport=rng.randrange(1024, 65536), dport=80, seq=rng.randrange(2**32), ack=1,
              flags="PA", window=512)
          if tcp else UDP(sport=rng.randrange(1024, 65536), dport=5678))
    return eth / ip / l4 / Raw(payload)


def l2(rng, vlan):
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    return eth / Dot1Q(vlan=rng.randrange(1, 4095)) if vlan else eth


def outer(rng, v6, vlan, options=False):
    eth = l2(rng, vlan)
    if v6:
        return eth / IPv6(src="2001:db8:ffff::1", dst="2001:db8:ffff::2", hlim=64)
    ip = IP(src="172.16.0.1", dst="172.16.0.2", id=rng.randrange(65536), flags="DF", ttl=64)
    if options:
        ip.options = [IPOption(b"\x94\x04\x00\x00")]  # router alert
    return eth / ip


def offset(p, layer):
    return len(bytes(p)) - len(bytes(layer))


def corrupt(p, cls, nb):
    layer = p.getlayer(cls, nb)
    if layer is None:
        return
    raw = Ether(bytes(p)).getlayer(cls, nb).chksum
    layer.chksum = raw ^ 0x0101


def checks(raw):
    """[(name, verdict)] for every checksum and length field of IPv4, IPv6, TCP and UDP,
    outermost first per protocol: each field deleted, the packet rebuilt by scapy and the
    value compared. Checksums are named "IP#1", lengths "IP#1.len"; a UDP checksum of 0 is
    None over IPv4 (absent) and False over IPv6."""
    p = Ether(raw)
    out = []
    fields = ((IP, ("chksum", "len")), (IPv6, ("plen",)), (UDP, ("chksum", "len")), (TCP, ("chksum",)))
    for cls, names in fields:
        nb = 1
        while True:
            layer = p.getlayer(cls, nb)
            if layer is None:
                break
            for field in names:
                name = "%s#%d%s" % (cls.__name__, nb, "" if field == "chksum" else "." + field)
                orig = getattr(layer, field)
                if cls is UDP and field == "chksum" and orig == 0:
                    out.append((name, None if isinstance(layer.underlayer, IP) else False))
                    continue
                q = Ether(raw)
                delattr(q.getlayer(cls, nb), field)
                out.append((name, getattr(Ether(bytes(q)).getlayer(cls, nb), field) == orig))
            nb += 1
    return out


def stack(raw):
    names, layer = [], Ether(raw)
    while not isinstance(layer, NoPayload):
        names.append(type(layer).__name__)
        layer = layer.payload
    return "/".join(names)


def verdicts(raw):
    """Per IP header, outermost first: [l3 verdict, l4 verdict] in the model's terms (IPv6
    is always good at L3; a zero UDP checksum over IPv4 is good; no TCP/UDP: None)."""
    cs = dict(checks(raw))
    counts, ips = {}, []
    layer = Ether(raw)
    while not isinstance(layer, NoPayload):
        c = type(layer)
        name = None
        if c in (IP, UDP, TCP):
            counts[c] = counts.get(c, 0) + 1
            name = "%s#%d" % (c.__name__, counts[c])
        if c in (IP, IPv6):
            ips.append([cs[name] if c is IP else True, None])
        elif c in (UDP, TCP) and isinstance(layer.underlayer, (IP, IPv6)):
            ips[-1][1] = cs[name] is not False
        layer = layer.payload
    return ips


def build(out_dir, seed):
    rng = random.Random(seed)
    frames, recs = [], []

    def add(p, rec):
        raw = bytes(p)
        v = verdicts(raw)
        rec.update(index=len(frames), len=len(raw), outer=v[0])
        rec["inner"] = v[1] if rec["kind"] != "none" and rec["malformed"] is None else None
        frames.append(Ether(raw))
        recs.append(rec)

    for kind in ("vxlan", "nvgre"):
        for ov6 in (False, True):
            for vlan in (False, True):
                for iv6 in (False, True):
                    for tcp in (False, True):
                        for variant in range(2):
                            o = outer(rng, ov6, vlan, options=(not ov6 and variant == 1))
                            inner = inner_frame(rng, iv6, tcp, bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))))
                            if kind == "vxlan":
                                vni = rng.randrange(1 << 24)
                                udp = UDP(sport=rng.randrange(49152, 65536), dport=4789)
                                if not ov6 and variant == 0:
                                    udp.chksum = 0
                                p = o / udp / VXLAN(flags=0x08, vni=vni) / inner
                                ident, flow = vni, 0
                            else:
                                vsid, flow = rng.randrange(1 << 24), rng.randrange(256)
                                p = o / GRE(key_present=1, key=(vsid << 8) | flow, proto=0x6558) / inner
                                ident = vsid
                            p = Ether(bytes(p))
                            # Corrupt one checksum in most frames, in turn: the outer IPv4
                            # header, the inner TCP/UDP, the inner IPv4 header, the outer UDP.
                            pick = len(frames) % 5
                            vx = kind == "vxlan"
                            if pick == 1:
                                corrupt(p, IP, 1)
                            elif pick == 2:
                                corrupt(p, TCP if tcp else UDP, 2 if vx and not tcp else 1)
                            elif pick == 3 and not iv6:
                                corrupt(p, IP, 1 if ov6 else 2)
                            elif pick == 4 and vx and p[UDP].chksum != 0:
                                corrupt(p, UDP, 1)
                            p = Ether(bytes(p))
                            hdr = p[VXLAN] if vx else p[GRE]
                            inner_eth = hdr.payload
                            ip_outer = p[IPv6] if ov6 else p[IP]
                            ip_inner = inner_eth.payload
                            add(p, {
                                "kind": kind, "id": ident, "flow_id": flow,
                                "outer_l3_off": offset(p, ip_outer),
                                "outer_l4_off": offset(p, ip_outer.payload),
                                "tunnel_off": offset(p, hdr),
                                "inner_off": offset(p, inner_eth),
                                "inner_l3_off": offset(inner_eth, ip_inner),
                                "inner_l4_off": offset(inner_eth, ip_inner.payload),
                                "malformed": None,
                            })

    # Malformed tunnels and near misses.
    def inner_ok():
        return inner_frame(rng, False, True, b"abc")

    for ov6 in (False, True):
        o = outer(rng, ov6, ov6)
        bad = [
            (o / UDP(sport=50000, dport=4789) / Raw(b"\x08\x00\x00"), "vxlan", "short_tunnel_header", 8),
            (o / UDP(sport=50000, dport=4789) / VXLAN(flags=0x00, vni=5) / inner_ok(), "vxlan", "vxlan_i_flag_clear", 8),
            (o / UDP(sport=50000, dport=4789) / VXLAN(flags=0x08, vni=5) / Raw(b"\x02" * 13), "vxlan", "inner_frame_too_short", 8),
            (o / GRE(key_present=1, key=0x12345601, proto=0x6558, chksum_present=1) / inner_ok(), "nvgre", "bad_gre_flags", 0),
            (o / GRE(key_present=1, key=0x12345601, proto=0x6558, seqnum_present=1, seqence_number=7) / inner_ok(), "nvgre", "bad_gre_flags", 0),
            (o / GRE(proto=0x6558) / inner_ok(), "nvgre", "bad_gre_flags", 0),
            (o / GRE(key_present=1, key=0x12345601, proto=0x6558, version=1) / inner_ok(), "nvgre", "bad_gre_version", 0),
            (o / GRE(key_present=1, key=0x12345601, proto=0x0800) / IP(dst="10.0.0.1") / TCP(), "nvgre", "bad_gre_protocol", 0),
            (o / GRE(key_present=1, key=0x12345601, proto=0x6558) / Raw(b"\x02" * 5), "nvgre", "inner_frame_too_short", 0),
            (o / Raw(b"\x20\x00\x65"), "nvgre", "short_tunnel_header", 0),
        ]
        for p, kind, why, extra in bad:
            if kind == "nvgre" and why == "short_tunnel_header":
                if ov6:
                    p[IPv6].nh = 47
                else:
                    p[IP].proto = 47
            p = Ether(bytes(p))
            ip_outer = p[IPv6] if ov6 else p[IP]
            l4 = offset(p, ip_outer.payload)
            add(p, {
                "kind": kind, "id": 0, "flow_id": 0,
                "outer_l3_off": offset(p, ip_outer), "outer_l4_off": l4,
                "tunnel_off": l4 + extra, "inner_off": None,
                "inner_l3_off": None, "inner_l4_off": None, "malformed": why,
            })
        # Not tunnels: VXLAN to port 8472, plain TCP.
        for p in (o / UDP(sport=50000, dport=8472) / VXLAN(flags=0x08, vni=5) / inner_ok(),
                  o / TCP(sport=1, dport=4789) / Raw(b"x" * 20)):
            p = Ether(bytes(p))
            ip_outer = p[IPv6] if ov6 else p[IP]
            add(p, {
                "kind": "none", "id": 0, "flow_id": 0,
                "outer_l3_off": offset(p, ip_outer), "outer_l4_off": offset(p, ip_outer.payload),
                "tunnel_off": None, "inner_off": None, "inner_l3_off": None,
                "inner_l4_off": None, "malformed": None,
            })

    wrpcap(f"{out_dir}/tunnels.pcap", frames)
    with open(f"{out_dir}/tunnels.jsonl", "w") as f:
        for r in recs:
            f.write(json.dumps(r, sort_keys=True) + "\n")

    # TSO super-frames (lengths as scapy computes them: they fit 16 bits here).
    supers, srecs = [], []
    for kind in ("plain", "vxlan", "vxlan_csum", "nvgre"):
        for ov6 in (False, True):
            for iv6 in (False, True):
                vlan = rng.random() < 0.5
                payload = bytes(rng.randrange(256) for _ in range(rng.choice([1, 999, 1000, 1001, 4321, 9000])))
                inner = inner_frame(rng, iv6, True, payload)
                inner[TCP].flags = rng.choice(["A", "PA", "FPA", "CA", "CFPA", "EA"])
                if kind == "plain":
                    p = l2(rng, vlan) / inner[IPv6 if iv6 else IP]
                elif kind == "nvgre":
                    p = outer(rng, ov6, vlan) / GRE(key_present=1, key=rng.randrange(1 << 32), proto=0x6558) / inner
                else:
                    udp = UDP(sport=rng.randrange(49152, 65536), dport=4789)
                    if kind == "vxlan" and not ov6:
                        udp.chksum = 0
                    p = outer(rng, ov6, vlan) / udp / VXLAN(flags=0x08, vni=rng.randrange(1 << 24)) / inner
                supers.append(Ether(bytes(p)))
                srecs.append({"index": len(srecs), "kind": kind, "mss": rng.choice([536, 1000, 1448, 1460, 77])})
    wrpcap(f"{out_dir}/supers.pcap", supers)
    with open(f"{out_dir}/supers.jsonl", "w") as f:
        for r in srecs:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def check(pcap, out):
    with open(out, "w") as f:
        for i, p in enumerate(rdpcap(pcap)):
            raw = bytes(p)
            f.write(json.dumps({"index": i, "stack": stack(raw),
                                "checks": [[n, v] for n, v in checks(raw)]}) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], int(sys.argv[3]))
    else:
        check(sys.argv[2], sys.argv[3])
"##;

/// One scapy-built tunnel frame and what the receive side must report for it.
#[derive(Debug, Clone, Deserialize)]
struct TunnelRecord {
    index: usize,
    kind: String,
    len: usize,
    id: u32,
    flow_id: u8,
    outer_l3_off: usize,
    outer_l4_off: usize,
    tunnel_off: Option<usize>,
    inner_off: Option<usize>,
    inner_l3_off: Option<usize>,
    inner_l4_off: Option<usize>,
    malformed: Option<String>,
    /// (l3, l4) checksum verdicts of the outer headers.
    outer: Option<(Option<bool>, Option<bool>)>,
    /// The same for the inner headers of a well-formed tunnel.
    inner: Option<(Option<bool>, Option<bool>)>,
}

/// A TCP super-frame for TSO.
#[derive(Debug, Clone, Deserialize)]
struct SuperRecord {
    index: usize,
    kind: String,
    mss: usize,
}

/// What scapy's check says about one frame.
#[derive(Debug, Clone, Deserialize)]
struct ScapyCheck {
    index: usize,
    stack: String,
    /// (field, verdict): true right, false wrong, null a UDP checksum of 0 over IPv4.
    checks: Vec<(String, Option<bool>)>,
}

struct Overlay {
    dir: PathBuf,
    tunnels: Vec<Vec<u8>>,
    tunnel_records: Vec<TunnelRecord>,
    supers: Vec<Vec<u8>>,
    super_records: Vec<SuperRecord>,
}

fn run_overlay_py(args: &[&str]) -> Result<(), String> {
    let script = out_dir().join("overlay.py");
    std::fs::write(&script, OVERLAY_PY).unwrap();
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    run_python(&script, &args)
}

fn jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{path:?} line {}: {e}", i + 1))
        })
        .collect()
}

/// The seed-1 overlay vectors, built once per test process.
fn overlay() -> Option<&'static Overlay> {
    static V: OnceLock<Result<Overlay, String>> = OnceLock::new();
    let v = V.get_or_init(|| {
        let dir = out_dir().join("overlay");
        std::fs::create_dir_all(&dir).unwrap();
        run_overlay_py(&["build", dir.to_str().unwrap(), "1"])?;
        let o = Overlay {
            tunnels: read_pcap(dir.join("tunnels.pcap")).unwrap(),
            tunnel_records: jsonl(&dir.join("tunnels.jsonl")),
            supers: read_pcap(dir.join("supers.pcap")).unwrap(),
            super_records: jsonl(&dir.join("supers.jsonl")),
            dir,
        };
        assert_eq!(o.tunnels.len(), o.tunnel_records.len());
        assert_eq!(o.supers.len(), o.super_records.len());
        for (i, (f, r)) in o.tunnels.iter().zip(&o.tunnel_records).enumerate() {
            assert_eq!((r.index, r.len), (i, f.len()), "tunnel frame {i}");
        }
        for (i, r) in o.super_records.iter().enumerate() {
            assert_eq!(r.index, i, "super-frame {i}");
        }
        Ok(o)
    });
    match v {
        Ok(v) => Some(v),
        Err(why) => {
            missing(why);
            None
        }
    }
}

fn verdict_pair(v: CsumVerdicts) -> (Option<bool>, Option<bool>) {
    (v.l3, v.l4)
}

#[test]
fn scapy_and_the_tunnel_model_agree() {
    let Some(o) = overlay() else { return };
    let cfg = TunnelConfig::default();
    let mut steering = Steering::new();
    steering.decap_all = true;
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for (r, f) in o.tunnel_records.iter().zip(&o.tunnels) {
        let t = parse_tunnel(f, &cfg);
        let inner = t.inner;
        let model = (
            t.kind.name(),
            t.id,
            t.flow_id,
            usize::from(t.outer.l3_off),
            usize::from(t.outer.l4_off),
            t.tunnel_off,
            inner.map(|i| i.off),
            inner.map(|i| usize::from(i.headers.l3_off)),
            inner.map(|i| usize::from(i.headers.l4_off)),
            t.malformed.map(Malformed::name),
            Some(verdict_pair(t.outer_csum)),
            inner.map(|i| verdict_pair(i.csum)),
        );
        let scapy = (
            r.kind.as_str(),
            r.id,
            r.flow_id,
            r.outer_l3_off,
            r.outer_l4_off,
            r.tunnel_off,
            r.inner_off,
            r.inner_l3_off,
            r.inner_l4_off,
            r.malformed.as_deref(),
            r.outer,
            r.inner,
        );
        if model != scapy {
            errors.push(format!(
                "frame {}: (kind, id, flow, outer l3/l4, tunnel, inner, inner l3/l4, malformed, outer, inner verdicts)\n  scapy {scapy:?}\n  model {model:?}",
                r.index
            ));
            continue;
        }
        // Decapsulation delivers exactly the inner frame of a well-formed tunnel, else the
        // whole frame.
        let (report, delivered) = decap(f, &cfg, &steering);
        let want = r.inner_off.map_or(&f[..], |off| &f[off..]);
        if delivered != want || report.decapped != r.inner_off.is_some() {
            errors.push(format!(
                "frame {}: decap delivered {} bytes",
                r.index,
                delivered.len()
            ));
        }
        seen.insert((r.kind.clone(), r.malformed.clone(), r.outer, r.inner));
    }
    assert!(
        errors.is_empty(),
        "{} disagreements between scapy and the tunnel model:\n{}",
        errors.len(),
        errors.join("\n")
    );
    // Every reason of the wire, and both verdicts of each checksum, were exercised. A tunnel
    // header beyond the receive parser's window is not a property of the frame: with the
    // default window, which sees every frame whole, it cannot occur (the model's own test
    // reaches it with a narrow window).
    let reasons: BTreeSet<_> = seen.iter().filter_map(|s| s.1.clone()).collect();
    let wire_reasons: BTreeSet<_> = Malformed::ALL
        .iter()
        .filter(|m| **m != Malformed::BeyondWindow)
        .map(|m| m.name().to_string())
        .collect();
    assert_eq!(reasons, wire_reasons);
    for bad in [
        |s: &Seen| s.2.is_some_and(|o| o.0 == Some(false)),
        |s: &Seen| s.2.is_some_and(|o| o.1 == Some(false)),
        |s: &Seen| s.3.is_some_and(|i| i.0 == Some(false)),
        |s: &Seen| s.3.is_some_and(|i| i.1 == Some(false)),
    ] {
        assert!(
            seen.iter().any(bad),
            "a bad checksum kind is missing from the vectors"
        );
    }
}

type Seen = (
    String,
    Option<String>,
    Option<(Option<bool>, Option<bool>)>,
    Option<(Option<bool>, Option<bool>)>,
);

/// Encapsulation contexts the oracle test cycles through: IPv4/IPv6 outer, with and without
/// VLAN, VXLAN with and without outer UDP checksum, NVGRE; inner checksums filled.
fn encap_contexts() -> Vec<EncapContext> {
    let mut v = Vec::new();
    for kind in [
        EncapKind::vxlan(0x00ABCD),
        EncapKind::Vxlan {
            vni: 0xFFFFFF,
            dst_port: 4789,
            udp_checksum: true,
        },
        EncapKind::Nvgre {
            vsid: 0x123456,
            flow_id: 0xAB,
        },
    ] {
        for v6 in [false, true] {
            for vlan in [false, true] {
                v.push(EncapContext {
                    dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
                    src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
                    vlan: vlan.then_some(VlanTag::customer(100)),
                    ip: if v6 {
                        OuterIp::V6 {
                            src: "2001:db8:ffff::1".parse().unwrap(),
                            dst: "2001:db8:ffff::2".parse().unwrap(),
                            hop_limit: 64,
                            traffic_class: 0x28,
                            flow_label: 0x12345,
                        }
                    } else {
                        OuterIp::V4 {
                            src: [172, 16, 0, 1].into(),
                            dst: [172, 16, 0, 2].into(),
                            ttl: 64,
                            tos: 0x28,
                            dont_frag: v6 || vlan,
                        }
                    },
                    kind,
                    inner_l3_csum: true,
                    inner_l4_csum: true,
                });
            }
        }
    }
    v
}

/// The model's encapsulations (of every well-formed scapy tunnel's inner frame, its
/// checksums filled by the offload even where scapy corrupted them), TSO segments of every
/// scapy super-frame, and encap + TSO of the plain ones: scapy and tshark must find every
/// checksum and length right.
#[test]
fn scapy_and_tshark_accept_the_model_encap_and_tso() {
    let Some(o) = overlay() else { return };
    let cfg = TunnelConfig::default();
    let contexts = encap_contexts();
    // (frame, what it is: "vxlan", "nvgre" or "plain", outer UDP checksum 0 over IPv4)
    let mut out: Vec<(Vec<u8>, &str)> = Vec::new();
    let name = |c: &EncapContext| match c.kind {
        EncapKind::Vxlan { .. } => "vxlan",
        EncapKind::Nvgre { .. } => "nvgre",
    };
    for (i, r) in o.tunnel_records.iter().enumerate() {
        if let Some(off) = r.inner_off {
            let c = &contexts[i % contexts.len()];
            out.push((encap(&o.tunnels[i][off..], c, i as u16).unwrap(), name(c)));
        }
    }
    let mut segments = 0;
    for (r, f) in o.super_records.iter().zip(&o.supers) {
        let segs = tso(f, r.mss, &cfg).unwrap_or_else(|e| panic!("super-frame {}: {e}", r.index));
        segments += segs.len();
        let kind = if r.kind.starts_with("vxlan") {
            "vxlan"
        } else {
            r.kind.as_str()
        };
        out.extend(segs.into_iter().map(|s| (s, kind)));
        if r.kind == "plain" {
            let c = &contexts[r.index % contexts.len()];
            let segs = encap_tso(f, r.mss, c, 0xFFF0).unwrap();
            out.extend(segs.into_iter().map(|s| (s, name(c))));
        }
    }
    assert!(
        segments > o.supers.len(),
        "the super-frames are cut into several segments"
    );
    let pcap = o.dir.join("model_out.pcap");
    let report = o.dir.join("model_out.jsonl");
    write_pcap(&pcap, &out.iter().map(|f| f.0.clone()).collect::<Vec<_>>()).unwrap();
    if let Err(why) = run_overlay_py(&["check", pcap.to_str().unwrap(), report.to_str().unwrap()]) {
        missing(&why);
        return;
    }
    let checks: Vec<ScapyCheck> = jsonl(&report);
    assert_eq!(checks.len(), out.len());
    let mut errors = Vec::new();
    for (c, (f, kind)) in checks.iter().zip(&out) {
        let mut fail = |what: String| {
            errors.push(format!(
                "model frame {} ({kind}): {what}; scapy {:?}",
                c.index, c.stack
            ))
        };
        let want_stack = match *kind {
            "vxlan" => "/UDP/VXLAN/Ether/",
            "nvgre" => "/GRE/Ether/",
            _ => "/",
        };
        if !c.stack.contains(want_stack) || !(c.stack.contains("/TCP") || c.stack.contains("/UDP"))
        {
            fail("scapy decodes another stack".into());
        }
        for (field, ok) in &c.checks {
            // Only an outer UDP checksum over IPv4 may be absent (0).
            let absent_ok = ok.is_none()
                && field == "UDP#1"
                && *kind == "vxlan"
                && parse_tunnel(f, &cfg).outer.l3 == nicgen_model::parse::L3_IPV4;
            if *ok != Some(true) && !absent_ok {
                fail(format!("{field}: {ok:?}"));
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} fields scapy computes differently:\n{}",
        errors.len(),
        errors.join("\n")
    );
    eprintln!(
        "scapy accepts {} model frames ({segments} TSO segments)",
        out.len()
    );
    if !tshark::tshark_required() {
        return;
    }
    let verdicts = tshark::check_checksums(&pcap).unwrap();
    assert_eq!(verdicts.len(), out.len());
    for ((t, c), (_, kind)) in verdicts.iter().zip(&checks).zip(&out) {
        let count = |p: &str| {
            c.checks
                .iter()
                .filter(|(f, _)| f.starts_with(p) && !f.contains('.'))
                .count()
        };
        // tshark saw every header scapy saw, and found every checksum good (an outer UDP
        // checksum of 0 over IPv4 is "not present").
        assert_eq!(
            (t.ip.len(), t.tcp.len(), t.udp.len()),
            (count("IP#"), count("TCP#"), count("UDP#")),
            "model frame {} ({kind}): tshark {t:?}, scapy {}",
            c.index,
            c.stack
        );
        let good = t.ip.iter().chain(&t.tcp).all(|s| *s == CsumStatus::Good)
            && t.udp.iter().enumerate().all(|(i, s)| {
                *s == CsumStatus::Good
                    || (i == 0 && *s == CsumStatus::NotPresent && *kind == "vxlan")
            });
        assert!(good, "model frame {} ({kind}): tshark {t:?}", c.index);
        let tunnel = match *kind {
            "vxlan" => ":vxlan:eth:",
            "nvgre" => ":gre:eth:",
            _ => ":",
        };
        assert!(
            t.protocols.contains(tunnel),
            "model frame {}: {}",
            c.index,
            t.protocols
        );
    }
}

// ---- the tools themselves --------------------------------------------------------------------

#[test]
fn tshark_checks_the_fcs() {
    let Some(v) = vectors() else { return };
    if !tshark::tshark_required() {
        return;
    }
    // The first 40 frames with an FCS appended; every third one corrupted.
    let frames: Vec<Vec<u8>> = v.frames[..40]
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut f = f.clone();
            nicgen_model::crc32::append_fcs(&mut f);
            if i % 3 == 2 {
                *f.last_mut().unwrap() ^= 0x40;
            }
            f
        })
        .collect();
    let path = out_dir().join("fcs.pcap");
    write_pcap(&path, &frames).unwrap();
    let with = tshark::check_checksums_with(&path, Fcs::Present).unwrap();
    let without = tshark::check_checksums(&v.pcap).unwrap();
    for (i, t) in with.iter().enumerate() {
        let want = if i % 3 == 2 {
            CsumStatus::Bad
        } else {
            CsumStatus::Good
        };
        assert_eq!(t.fcs, Some(want), "frame {i}: {t:?}");
        // The FCS does not change what tshark says about the checksums inside.
        assert_eq!(
            (&t.ip, &t.tcp, &t.udp),
            (&without[i].ip, &without[i].tcp, &without[i].udp),
            "frame {i}"
        );
        assert_eq!(without[i].fcs, None);
    }
}

#[test]
fn make_frames_is_deterministic_and_seeded() {
    let Some(v) = vectors() else { return };
    let Ok((again, again_jsonl)) = run_make_frames(1, "again").map_err(|e| missing(&e)) else {
        return;
    };
    // Same seed, separate run: identical pcap and sidecar.
    assert_eq!(read_pcap(&again).unwrap(), v.frames);
    let first = std::fs::read_to_string(v.pcap.with_extension("jsonl")).unwrap();
    assert_eq!(std::fs::read_to_string(&again_jsonl).unwrap(), first);
    let Ok((other, _)) = run_make_frames(2, "seed2").map_err(|e| missing(&e)) else {
        return;
    };
    assert_ne!(
        read_pcap(&other).unwrap(),
        v.frames,
        "the seed changes the frames"
    );
}
