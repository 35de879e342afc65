//! Differential test of the RX header parser (`eth_hdr_parse`) against
//! `nicgen_model::parse::parse_headers`, over bus width (8, 64, 512 bits) x idle x backpressure
//! on the record output, with frames built by the model's emitters (VLAN tags, IPv4 with
//! options and fragments, IPv6 with extension headers, TCP, UDP, other protocols), every
//! truncation of a few base frames, corrupted headers, random bytes, and the vectors of
//! wire-formats.md. Records are compared field by field after `ParseResult::canonical` (fields
//! that are not valid are don't-care). Also: other widths, windows and FIFO depths; the
//! documented latency; 1-beat frames back to back at full rate; parameter checks; the codes and
//! layout against the model's.

use nicgen_edsl::Shape;
use nicgen_hdl::eth::eth_hdr_parse::{
    eth_hdr_parse, meta_layout, view_layout, HdrParseCfg, ParseMeta, View, CSUM_RECORD, LATENCY,
    LATENCY_AFTER_LAST, ONE_RECORD,
};
use nicgen_model::ethernet::{
    EtherType, EthernetAddress, Frame, Repr as EthRepr, TagProtocol, VlanTag,
};
use nicgen_model::ip::IpProtocol;
use nicgen_model::parse::{malformed, parse_headers, Claims, ParseResult};
use nicgen_model::{ipv4, ipv6, tcp, udp};
use nicgen_tb::stream::{
    run_until_seeded, step, Agent, Status, StreamDriver, StreamError, StreamMonitor, StreamPorts,
    Violation,
};
use nicgen_tb::{PortId, Sim};
use nicgen_tests::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const WINDOW: usize = 128;

// ------------------------------------------------------------------------------------------
// Frames.

fn hex(dump: &str) -> Vec<u8> {
    let digits: String = dump
        .lines()
        .map(|l| l.split_once(':').map_or(l, |(_, r)| r))
        .flat_map(|l| l.chars())
        .filter(|c| c.is_ascii_hexdigit())
        .collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

/// wire-formats.md §1.6 (T1 the real CX-4 Lx CNP capture; T2 scapy; T3, T4 (IPv6), T5, T7, T8
/// (IPv6)) and §3.2 (IPv6/UDP "hello", given an Ethernet header here).
fn reference_vectors() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "T1",
            hex(
                "e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2 003c 718c 4000 4011 9161 0a00 1101 0a00
                    1201 0000 12b7 0028 0000 8100 ffff 4000 0118 0000 0000 0000 0000 0000 0000 0000
                    0000 0000 0000 82fd 002a",
            ),
        ),
        (
            "T2",
            hex(
                "248a07a8fa22 248a07a8fa22 0800 4501 0040 0478 4000 4011 b4d5 c0a8 0007 c0a8 0007
                    c000 12b7 002c 0000 2460 ffff 0000 00d3 00cf 1710
                    4630 818b e289 35d9 0e9a 9550 5401 be88 5e50 0000 78f3 53f3",
            ),
        ),
        (
            "T3",
            hex("0000: 0200 0000 0002 0200 0000 0001 0800 4502
                    0010: 003c 0000 4000 4011 b75b c0a8 0101 c0a8
                    0020: 0102 c000 12b7 0028 0000 0440 ffff 0000
                    0030: 0011 8000 0100 0001 0203 0405 0607 0809
                    0040: 0a0b 0c0d 0e0f 1649 c6ab"),
        ),
        (
            "T4",
            hex("0000: 0200 0000 0002 0200 0000 0001 86dd 6000
                    0010: 0000 0030 1140 fe80 0000 0000 0000 0000
                    0020: 0000 0000 0001 fe80 0000 0000 0000 0000
                    0030: 0000 0000 0002 d1a2 12b7 0030 0000 0a70
                    0040: ffff 0000 0022 8012 3456 0000 7f00 0000
                    0050: 1000 0000 1234 0000 0005 6865 6c6c 6f00
                    0060: 0000 ff73 feb2"),
        ),
        (
            "T5",
            hex("0000: 0200 0000 0002 0200 0000 0001 0800 4502
                    0010: 0030 0000 4000 4011 b767 c0a8 0102 c0a8
                    0020: 0101 c000 12b7 001c 0000 1100 ffff 0000
                    0030: 0033 0000 0100 1f00 0001 2e38 796f"),
        ),
        (
            "T7",
            hex("0000: 0200 0000 0002 0200 0000 0001 0800 4500
                    0010: 003c 1234 4000 4011 147b 0a00 0001 0a00
                    0020: 0002 c123 12b7 0028 0000 6480 ffff 0000
                    0030: 0001 0000 0007 8001 0000 0000 0001 4142
                    0040: 4344 4546 4748 207e e972"),
        ),
        (
            "T8",
            hex("0000: 0200 0000 0002 0200 0000 0001 86dd 6c20
                    0010: 0000 0028 1140 fe80 0000 0000 0000 0000
                    0020: 0000 0000 0002 fe80 0000 0000 0000 0000
                    0030: 0000 0000 0001 c000 12b7 0028 0000 8100
                    0040: ffff 4000 0044 0000 0000 0000 0000 0000
                    0050: 0000 0000 0000 0000 0000 ad2b c391"),
        ),
        (
            "hello",
            hex("0200 0000 0002 0200 0000 0001 86dd
                    6000 0000 000d 1140 2001 0db8 0000 0000 0000 0000 0000 0001
                    2001 0db8 0000 0000 0000 0000 0000 0002 04d2 162e 000d 458d 6865 6c6c 6f"),
        ),
    ]
}

/// What the frame carries above L3.
#[derive(Clone, Copy, Debug)]
enum Upper {
    Tcp { opts: usize },
    Udp,
    Other(u8),
}

/// IPv6 extension header to put in front of the upper layer.
#[derive(Clone, Copy, Debug)]
enum Ext {
    /// Hop-by-hop (0), routing (43) or destination options (60), `(len + 1) * 8` bytes.
    Opts(u8, u8),
    /// Fragment header with this offset (bytes, multiple of 8) and M flag.
    Frag(u16, bool),
}

#[derive(Clone, Debug)]
enum L3 {
    V4 {
        opts: usize,
        mf: bool,
        frag_off: u16,
    },
    V6 {
        exts: Vec<Ext>,
    },
}

#[derive(Clone, Debug)]
struct Spec {
    tags: Vec<VlanTag>,
    l3: L3,
    upper: Upper,
    payload: usize,
    pad: usize,
}

fn v4addr(rng: &mut StdRng) -> Ipv4Addr {
    Ipv4Addr::from(rng.gen::<u32>())
}

fn v6addr(rng: &mut StdRng) -> Ipv6Addr {
    Ipv6Addr::from(rng.gen::<u128>())
}

/// The L4 bytes (header + payload) for `upper` between `src` and `dst`.
fn l4_bytes(rng: &mut StdRng, upper: Upper, payload: usize, src: IpAddr, dst: IpAddr) -> Vec<u8> {
    let data: Vec<u8> = (0..payload).map(|_| rng.gen()).collect();
    match upper {
        Upper::Tcp { opts } => {
            let opt_bytes: Vec<u8> = (0..opts).map(|_| 1u8).collect(); // NOPs
            let repr = tcp::Repr {
                src_port: rng.gen(),
                dst_port: rng.gen(),
                seq_number: rng.gen(),
                ack_number: rng.gen(),
                flags: tcp::Flags(rng.gen_range(0..0x200)),
                window_len: rng.gen(),
                urgent_at: 0,
                options: &opt_bytes,
                payload: &data,
            };
            let mut buf = vec![0xA5; repr.buffer_len()];
            repr.emit(&mut tcp::Packet::new_unchecked(&mut buf[..]), src, dst);
            buf
        }
        Upper::Udp => {
            let repr = udp::Repr {
                src_port: rng.gen(),
                dst_port: rng.gen(),
                payload: &data,
            };
            let mut buf = vec![0xA5; repr.buffer_len()];
            repr.emit(&mut udp::Packet::new_unchecked(&mut buf[..]), src, dst);
            buf
        }
        Upper::Other(_) => data,
    }
}

fn proto_of(upper: Upper) -> u8 {
    match upper {
        Upper::Tcp { .. } => 6,
        Upper::Udp => 17,
        Upper::Other(p) => p,
    }
}

/// A frame built with the model's emitters.
fn build(rng: &mut StdRng, spec: &Spec) -> Vec<u8> {
    let (ethertype, l3) = match &spec.l3 {
        L3::V4 { opts, mf, frag_off } => {
            let (s, d) = (v4addr(rng), v4addr(rng));
            let l4 = l4_bytes(rng, spec.upper, spec.payload, s.into(), d.into());
            let opt_bytes = vec![1u8; *opts];
            let repr = ipv4::Repr {
                src_addr: s,
                dst_addr: d,
                protocol: IpProtocol::from(proto_of(spec.upper)),
                payload_len: l4.len(),
                ttl: 64,
                dscp: rng.gen_range(0..64),
                ecn: rng.gen_range(0..4),
                ident: rng.gen(),
                dont_frag: rng.gen(),
                more_frags: *mf,
                frag_offset: *frag_off,
                options: &opt_bytes,
            };
            let mut buf = vec![0xA5; repr.buffer_len() + l4.len()];
            repr.emit(&mut ipv4::Packet::new_unchecked(&mut buf[..]));
            let h = repr.buffer_len();
            buf[h..].copy_from_slice(&l4);
            (EtherType::Ipv4, buf)
        }
        L3::V6 { exts } => {
            let (s, d) = (v6addr(rng), v6addr(rng));
            let l4 = l4_bytes(rng, spec.upper, spec.payload, s.into(), d.into());
            // Extension headers, innermost last; each names the next.
            let mut chain: Vec<u8> = Vec::new();
            let kinds: Vec<u8> = exts
                .iter()
                .map(|e| match e {
                    Ext::Opts(k, _) => *k,
                    Ext::Frag(..) => 44,
                })
                .collect();
            for (i, e) in exts.iter().enumerate() {
                let next = kinds.get(i + 1).copied().unwrap_or(proto_of(spec.upper));
                match e {
                    Ext::Opts(_, len) => {
                        let mut h = vec![next, *len];
                        h.extend((0..(usize::from(*len) + 1) * 8 - 2).map(|_| rng.gen::<u8>()));
                        chain.extend(h);
                    }
                    Ext::Frag(off, m) => {
                        chain.extend([next, 0]);
                        chain.extend((off | u16::from(*m)).to_be_bytes());
                        chain.extend(rng.gen::<u32>().to_be_bytes());
                    }
                }
            }
            let first = kinds.first().copied().unwrap_or(proto_of(spec.upper));
            let repr = ipv6::Repr {
                src_addr: s,
                dst_addr: d,
                next_header: IpProtocol::from(first),
                payload_len: chain.len() + l4.len(),
                hop_limit: 64,
                traffic_class: rng.gen(),
                flow_label: rng.gen_range(0..1 << 20),
            };
            let mut buf = vec![0xA5; 40];
            repr.emit(&mut ipv6::Packet::new_unchecked(&mut buf[..]));
            buf.extend(chain);
            buf.extend(l4);
            (EtherType::Ipv6, buf)
        }
    };
    let eth = EthRepr {
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
        src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
        outer_tag: spec.tags.first().copied(),
        inner_tag: spec.tags.get(1).copied(),
        ethertype,
    };
    let mut f = vec![0xA5; eth.buffer_len()];
    eth.emit(&mut Frame::new_unchecked(&mut f[..]));
    f.extend(l3);
    f.extend((0..spec.pad).map(|_| rng.gen::<u8>()));
    f
}

fn random_tag(rng: &mut StdRng) -> VlanTag {
    VlanTag {
        protocol: if rng.gen() {
            TagProtocol::Customer
        } else {
            TagProtocol::Service
        },
        pcp: rng.gen_range(0..8),
        dei: rng.gen(),
        vid: rng.gen_range(0..0x1000),
    }
}

fn random_spec(rng: &mut StdRng) -> Spec {
    let tags = (0..[0, 0, 1, 2][rng.gen_range(0..4)])
        .map(|_| random_tag(rng))
        .collect();
    let upper = match rng.gen_range(0..10) {
        0..=3 => Upper::Tcp {
            opts: 4 * [0, 0, 1, 3, 10][rng.gen_range(0..5)],
        },
        4..=7 => Upper::Udp,
        _ => Upper::Other([1, 47, 58, 50, 59, 132][rng.gen_range(0..6)]),
    };
    let l3 = if rng.gen_bool(0.55) {
        let frag = rng.gen_bool(0.15);
        L3::V4 {
            opts: 4 * [0, 0, 0, 1, 4, 10][rng.gen_range(0..6)],
            mf: frag && rng.gen(),
            frag_off: if frag && rng.gen() {
                8 * rng.gen_range(1..100)
            } else {
                0
            },
        }
    } else {
        let n = [0, 0, 1, 1, 2, 3, 4, 5][rng.gen_range(0..8)];
        let exts = (0..n)
            .map(|_| match rng.gen_range(0..5) {
                0 => Ext::Frag(
                    if rng.gen() {
                        0
                    } else {
                        8 * rng.gen_range(1..50)
                    },
                    rng.gen(),
                ),
                k => Ext::Opts(
                    [0, 43, 60, 60][k - 1],
                    if rng.gen_bool(0.1) {
                        rng.gen_range(4..12)
                    } else {
                        rng.gen_range(0..3)
                    },
                ),
            })
            .collect();
        L3::V6 { exts }
    };
    let payload = if rng.gen_bool(0.1) {
        rng.gen_range(100..400)
    } else {
        rng.gen_range(0..40)
    };
    let pad = if rng.gen_bool(0.3) {
        rng.gen_range(1..12)
    } else {
        0
    };
    Spec {
        tags,
        l3,
        upper,
        payload,
        pad,
    }
}

/// Break a good frame the way a parser must survive: cut it, or overwrite a header field with
/// a value aimed at one of the checks (offsets from the model, with an unlimited window).
fn mutate(rng: &mut StdRng, f: &mut Vec<u8>) {
    let r = parse_headers(f, 1 << 16);
    let l3 = usize::from(r.l3_off);
    let l4 = usize::from(r.l4_off);
    let put16 = |f: &mut Vec<u8>, at: usize, v: u16| {
        if at + 2 <= f.len() {
            f[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
    };
    match rng.gen_range(0..10) {
        0 | 1 => {
            let len = rng.gen_range(1..f.len().max(2));
            f.truncate(len);
        }
        2 if f.len() > l3 => f[l3] = rng.gen(), // version / IHL
        3 if r.l3 == 1 => {
            let hdr = 4 * usize::from(f[l3] & 0xF);
            let v =
                [rng.gen_range(0..24), hdr + rng.gen_range(0..24), rng.gen()][rng.gen_range(0..3)];
            put16(f, l3 + 2, v as u16); // IPv4 total length
        }
        3 if r.l3 == 2 => {
            let v = [rng.gen_range(0..16), rng.gen_range(0..64), rng.gen()][rng.gen_range(0..3)];
            put16(f, l3 + 4, v); // IPv6 payload length
        }
        4 if r.l4 == 2 => {
            let v = [
                rng.gen_range(0..8),
                r.l4_len + rng.gen_range(1..20),
                rng.gen(),
            ][rng.gen_range(0..3)];
            put16(f, l4 + 4, v); // UDP length
        }
        5 if r.l4 == 1 && l4 + 12 < f.len() => f[l4 + 12] = rng.gen(), // TCP data offset
        6 if r.l3 == 2 && l4 > l3 + 40 && l3 + 41 < f.len() => {
            // The first extension header's length, or its next header.
            let at = l3 + 40 + rng.gen_range(0..2);
            f[at] = if at == l3 + 40 {
                [0, 43, 44, 60, 6, 17][rng.gen_range(0..6)]
            } else {
                rng.gen()
            };
        }
        7 => {
            let at = rng.gen_range(12..f.len().clamp(13, 140));
            if at < f.len() {
                f[at] = rng.gen();
            }
        }
        _ => {
            let at = rng.gen_range(12..f.len().clamp(13, 100));
            if at < f.len() {
                f[at] ^= 1 << rng.gen_range(0..8);
            }
        }
    }
}

/// One frame aimed at each malformed code (and at the limits of the walk).
fn targeted(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let v4 = |rng: &mut StdRng, upper| {
        let spec = Spec {
            tags: vec![],
            l3: L3::V4 {
                opts: 0,
                mf: false,
                frag_off: 0,
            },
            upper,
            payload: 30,
            pad: 0,
        };
        build(rng, &spec)
    };
    let v6 = |rng: &mut StdRng, exts: Vec<Ext>, upper| {
        let spec = Spec {
            tags: vec![random_tag(rng)],
            l3: L3::V6 { exts },
            upper,
            payload: 30,
            pad: 0,
        };
        build(rng, &spec)
    };
    let mut out = Vec::new();
    let set = |mut f: Vec<u8>, at: usize, v: &[u8]| {
        f[at..at + v.len()].copy_from_slice(v);
        f
    };
    let tcp = Upper::Tcp { opts: 0 };
    out.push(set(v4(rng, tcp), 16, &[0, 19])); // IPV4_TOTAL_LEN
    out.push(set(v4(rng, tcp), 16, &[0, 30])); // L4_TRUNC (10 bytes of TCP)
    out.push(set(v4(rng, Upper::Udp), 16, &[0, 27])); // L4_TRUNC (7 bytes of UDP)
    out.push(set(v4(rng, tcp), 14, &[0x44])); // IPV4_IHL
    out.push(set(v4(rng, tcp), 14, &[0x65])); // IP_VERSION
    out.push(set(v4(rng, tcp), 46, &[0x30])); // L4_BAD (data offset 3)
    out.push(set(v4(rng, tcp), 46, &[0xf0])); // L4_TRUNC (data offset 15 > segment)
    out.push(set(v4(rng, Upper::Udp), 38, &[0, 5])); // L4_BAD (UDP length 5)
    out.push(set(v4(rng, Upper::Udp), 38, &[0, 99])); // L4_TRUNC (UDP length > datagram)
    let ext = vec![Ext::Opts(0, 1), Ext::Opts(60, 0)];
    out.push(set(v6(rng, ext.clone(), Upper::Udp), 22, &[0, 1])); // EXT_TRUNC (payload 1)
    out.push(set(v6(rng, ext.clone(), Upper::Udp), 22, &[0, 20])); // EXT_TRUNC (len 16 > 20 - 16)
    out.push(set(v6(rng, ext, Upper::Udp), 63, &[0xff])); // EXT_TRUNC (2 KB header)
    let five = vec![
        Ext::Opts(0, 0),
        Ext::Opts(43, 0),
        Ext::Frag(0, true),
        Ext::Opts(60, 0),
        Ext::Opts(60, 0),
    ];
    out.push(v6(rng, five, Upper::Udp)); // EXT_LIMIT
    let four = vec![
        Ext::Opts(0, 0),
        Ext::Opts(43, 0),
        Ext::Opts(60, 0),
        Ext::Opts(60, 0),
    ];
    out.push(v6(rng, four, Upper::Udp)); // four headers: the walk's last stage latches UDP
    out.push(v6(rng, vec![Ext::Opts(0, 8), Ext::Opts(60, 0)], tcp)); // EXT_WINDOW
    out.push(v6(rng, vec![Ext::Opts(0, 6)], tcp)); // L4_WINDOW (TCP at 124)
    out.push(v6(rng, vec![Ext::Opts(0, 5)], Upper::Udp)); // UDP header ends at 124: fits
    out.push(v6(rng, vec![Ext::Frag(64, false)], tcp)); // later fragment
    out
}

/// The frames of one run: reference vectors, every cut of three base frames, random built
/// frames (a third of them broken), random bytes, tiny frames.
fn frame_set(seed: u64, n_random: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut frames: Vec<Vec<u8>> = reference_vectors().into_iter().map(|(_, f)| f).collect();
    frames.extend(targeted(&mut rng));
    let bases = [
        Spec {
            tags: vec![random_tag(&mut rng)],
            l3: L3::V4 {
                opts: 8,
                mf: false,
                frag_off: 0,
            },
            upper: Upper::Tcp { opts: 12 },
            payload: 3,
            pad: 0,
        },
        Spec {
            tags: vec![random_tag(&mut rng), random_tag(&mut rng)],
            l3: L3::V6 {
                exts: vec![Ext::Opts(0, 0), Ext::Frag(0, true), Ext::Opts(60, 1)],
            },
            upper: Upper::Udp,
            payload: 2,
            pad: 0,
        },
    ];
    for spec in &bases {
        let f = build(&mut rng, spec);
        for len in 1..=f.len() {
            frames.push(f[..len].to_vec());
        }
    }
    let t1 = frames[0].clone();
    for len in 1..t1.len() {
        frames.push(t1[..len].to_vec());
    }
    for _ in 0..n_random {
        let r = rng.gen_range(0..20);
        let f = match r {
            0 => (0..rng.gen_range(1..200)).map(|_| rng.gen()).collect(),
            1 => {
                // Random bytes behind an IP EtherType (reaches the L3 checks).
                let mut f: Vec<u8> = (0..rng.gen_range(14..160)).map(|_| rng.gen()).collect();
                let et: u16 = if rng.gen() { 0x0800 } else { 0x86dd };
                f[12..14].copy_from_slice(&et.to_be_bytes());
                if f.len() > 14 && rng.gen() {
                    f[14] = if et == 0x0800 {
                        0x40 | (f[14] & 0xF)
                    } else {
                        0x60 | (f[14] & 0xF)
                    };
                }
                f
            }
            2 => (0..rng.gen_range(1..4)).map(|_| rng.gen()).collect(),
            3 => {
                // Not IP.
                let spec = random_spec(&mut rng);
                let mut f = build(&mut rng, &spec);
                let at = 12 + 4 * parse_headers(&f, WINDOW).vlan_count as usize;
                let et: u16 = [0x0806, 0x9100, 0x8808, 0x88cc, rng.gen()][rng.gen_range(0..5)];
                f[at..at + 2].copy_from_slice(&et.to_be_bytes());
                f
            }
            _ => {
                let spec = random_spec(&mut rng);
                let mut f = build(&mut rng, &spec);
                if rng.gen_bool(0.5) {
                    mutate(&mut rng, &mut f);
                }
                f
            }
        };
        frames.push(f);
    }
    frames
}

// ------------------------------------------------------------------------------------------
// Running the parser.

/// Sink of the record stream (`tdata/tvalid/tready`, no `tkeep`/`tlast`): random `tready`,
/// rule 1 (hold) checked on every cycle.
struct MetaSink {
    data: PortId,
    valid: PortId,
    ready: PortId,
    rng: StdRng,
    seed: u64,
    backpressure: f64,
    held: Option<Vec<u8>>,
    items: Vec<Vec<u8>>,
}

impl MetaSink {
    fn new(sim: &Sim, seed: u64, backpressure: f64) -> MetaSink {
        MetaSink {
            data: sim.port("m_axis_meta_tdata").unwrap(),
            valid: sim.port("m_axis_meta_tvalid").unwrap(),
            ready: sim.port("m_axis_meta_tready").unwrap(),
            rng: StdRng::seed_from_u64(seed),
            seed,
            backpressure,
            held: None,
            items: Vec::new(),
        }
    }
}

impl Agent for MetaSink {
    fn drive(&mut self, sim: &mut Sim) {
        let r = !self.rng.gen_bool(self.backpressure);
        sim.set_bool(self.ready, r);
    }
    fn observe(&mut self, sim: &Sim) -> Result<bool, StreamError> {
        let valid = sim.get_bool(self.valid);
        let data = sim.get_bytes_le(self.data);
        let violation = |message: &str| {
            StreamError::Violation(Violation {
                seed: self.seed,
                cycle: sim.cycles().saturating_sub(1),
                prefix: "m_axis_meta".into(),
                rule: 1,
                message: message.into(),
            })
        };
        if let Some(h) = &self.held {
            if !valid {
                return Err(violation("tvalid fell before the record was taken"));
            }
            if *h != data {
                return Err(violation("tdata changed while tvalid && !tready"));
            }
        }
        if !valid {
            return Ok(false);
        }
        if sim.get_bool(self.ready) {
            self.held = None;
            self.items.push(data);
            Ok(true)
        } else {
            self.held = Some(data);
            Ok(false)
        }
    }
}

/// Drive `frames` (with their `tuser`) and collect one record per frame. Returns the records
/// and the number of cycles in which a valid input beat was refused.
fn run(sim: &mut Sim, k: Knobs, frames: &[(Vec<u8>, u64)]) -> (Vec<Vec<u8>>, u64) {
    let sp = StreamPorts::new(sim, "s_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), k.seed, k.idle);
    let mut mon = StreamMonitor::new(sp.clone(), k.seed);
    for (f, u) in frames {
        drv.push_with_user(f.clone(), *u);
    }
    let mut sink = MetaSink::new(sim, k.seed ^ 0x5eed, k.backpressure);
    let mut refused = 0;
    run_until_seeded(sim, k.seed, 2000, |sim| {
        let progressed = step(sim, &mut [&mut drv, &mut mon, &mut sink])?;
        if sim.get_bool(sp.tvalid) && !sim.get_bool(sp.tready) {
            refused += 1;
        }
        Ok(Status::new(progressed, sink.items.len() >= frames.len()))
    })
    .unwrap_or_else(|e| panic!("seed {:#x}: {e}", k.seed));
    // Nothing more may come out.
    for _ in 0..30 {
        step(sim, &mut [&mut drv, &mut mon, &mut sink]).unwrap();
    }
    assert_eq!(
        sink.items.len(),
        frames.len(),
        "seed {:#x}: extra records",
        k.seed
    );
    (sink.items, refused)
}

/// The record of `view` as a [`ParseResult`]; a field the view leaves out is taken from
/// `want`, so that only the fields it carries are compared.
fn decode(bytes: &[u8], view: &View, user_bits: u32, want: &ParseResult) -> ParseResult {
    let (s, m) = (view_layout(view, user_bits), want);
    let v = s.decode(bytes);
    // The field's value when the view carries it (width > 0), else `or`.
    let g = |width: u32, v: u128, or: u128| if width > 0 { v } else { or };
    ParseResult {
        vlan_count: g(s.vlan_count, v.vlan_count, m.vlan_count.into()) as u8,
        tag0_tpid_s: g(s.tag0_tpid_s, v.tag0_tpid_s, m.tag0_tpid_s.into()) != 0,
        tag0_tci: g(s.tag0_tci, v.tag0_tci, m.tag0_tci.into()) as u16,
        tag1_tci: g(s.tag1_tci, v.tag1_tci, m.tag1_tci.into()) as u16,
        ethertype: g(s.ethertype, v.ethertype, m.ethertype.into()) as u16,
        l3: g(s.l3, v.l3, m.l3.into()) as u8,
        l4: g(s.l4, v.l4, m.l4.into()) as u8,
        l3_off: g(s.l3_off, v.l3_off, m.l3_off.into()) as u8,
        l4_off: g(s.l4_off, v.l4_off, m.l4_off.into()) as u16,
        ip_end: g(s.ip_end, v.ip_end, m.ip_end.into()) as u16,
        frame_len: g(s.frame_len, v.frame_len, m.frame_len.into()) as u16,
        frag: g(s.frag, v.frag, m.frag.into()) != 0,
        ipv4_opts: g(s.ipv4_opts, v.ipv4_opts, m.ipv4_opts.into()) != 0,
        ip_proto: g(s.ip_proto, v.ip_proto, m.ip_proto.into()) as u8,
        src_ip: g(s.src_ip, v.src_ip, m.src_ip),
        dst_ip: g(s.dst_ip, v.dst_ip, m.dst_ip),
        ip_sum: g(s.ip_sum, v.ip_sum, m.ip_sum.into()) as u16,
        src_port: g(s.src_port, v.src_port, m.src_port.into()) as u16,
        dst_port: g(s.dst_port, v.dst_port, m.dst_port.into()) as u16,
        l4_len: g(s.l4_len, v.l4_len, m.l4_len.into()) as u16,
        malformed: g(s.malformed, v.malformed, m.malformed.into()) as u8,
        // Left out (read 0) without `tuser`.
        user: v.user as u64,
    }
}

/// The claims of a record of `view`; a claim the view leaves out is taken from `want`.
fn decode_claims(bytes: &[u8], view: &View, user_bits: u32, want: Claims) -> Claims {
    let (s, m) = (view_layout(view, user_bits), want);
    let v = s.decode(bytes);
    let g = |width: u32, v: u128, or: u128| if width > 0 { v } else { or };
    Claims {
        l3: g(s.l3_claim, v.l3_claim, m.l3.into()) as u8,
        l4: g(s.l4_claim, v.l4_claim, m.l4.into()) as u8,
        vlan: g(s.vlan, v.vlan, m.vlan.into()) != 0,
        ext_bad: g(s.ext_bad, v.ext_bad, m.ext_bad.into()) != 0,
        l3_off: g(s.csum_l3_off, v.csum_l3_off, m.l3_off.into()) as u16,
        l4_off: g(s.csum_l4_off, v.csum_l4_off, m.l4_off.into()) as u16,
        end: g(s.csum_end, v.csum_end, m.end.into()) as u16,
    }
}

fn check(frames: &[(Vec<u8>, u64)], got: &[Vec<u8>], user_bits: u32, window: usize, what: &str) {
    check_fields(frames, got, &ONE_RECORD[0], user_bits, window, what)
}

fn check_fields(
    frames: &[(Vec<u8>, u64)],
    got: &[Vec<u8>],
    view: &View,
    user_bits: u32,
    window: usize,
    what: &str,
) {
    for (i, ((f, u), rec)) in frames.iter().zip(got).enumerate() {
        let mut want = parse_headers(f, window);
        want.user = *u;
        let have = decode(rec, view, user_bits, &want).canonical();
        assert_eq!(
            have,
            want,
            "{what}: frame {i} ({} bytes): {:02x?}",
            f.len(),
            &f[..f.len().min(96)]
        );
        // The claims are valid in every record, so they are compared as they come.
        assert_eq!(
            decode_claims(rec, view, user_bits, want.claims()),
            want.claims(),
            "{what}: frame {i} ({} bytes), claims: {:02x?}",
            f.len(),
            &f[..f.len().min(96)]
        );
    }
}

#[test]
fn parser_matches_the_model() {
    // Every field at 8, 64 and 512 bits; the checksum-only record of the TX path at 64.
    for (wi, (w, user_bits, views)) in [
        (8u32, 0u32, ONE_RECORD),
        (64, 2, ONE_RECORD),
        (512, 0, ONE_RECORD),
        (64, 0, CSUM_RECORD),
    ]
    .into_iter()
    .enumerate()
    {
        let def = eth_hdr_parse(&HdrParseCfg {
            views,
            ..HdrParseCfg::new(w, user_bits)
        })
        .unwrap();
        let Some(d) = dut(&def) else {
            return;
        };
        lint_clean(&d.gen);
        let mut knobs = matrix(60 + wi as u64);
        // Records taken rarely: the credit counter must stop the input, not lose records.
        knobs.push(Knobs {
            seed: 6900 + wi as u64,
            idle: 0.1,
            backpressure: 0.9,
        });
        for k in knobs {
            let n_random = if w == 8 { 800 } else { 3000 };
            let mut urng = StdRng::seed_from_u64(k.seed);
            let frames: Vec<(Vec<u8>, u64)> = frame_set(k.seed, n_random)
                .into_iter()
                .map(|f| {
                    (
                        f,
                        if user_bits > 0 {
                            urng.gen_range(0..1u64 << user_bits)
                        } else {
                            0
                        },
                    )
                })
                .collect();
            // The generator reaches every malformed code.
            let mut seen = [false; 13];
            for (f, _) in &frames {
                seen[parse_headers(f, WINDOW).malformed as usize] = true;
            }
            assert!(
                seen.iter().all(|s| *s),
                "seed {:#x}: codes reached {seen:?}",
                k.seed
            );
            let mut sim = d.model.instance();
            reset(&mut sim);
            let (got, refused) = run(&mut sim, k, &frames);
            check_fields(
                &frames,
                &got,
                &views[0],
                user_bits,
                WINDOW,
                &format!(
                    "w={w} {} {k:?}",
                    if views == CSUM_RECORD {
                        "csum record"
                    } else {
                        "full record"
                    }
                ),
            );
            eprintln!(
                "w={w} {k:?}: {} frames, {} cycles",
                frames.len(),
                sim.cycles()
            );
            if k.backpressure == 0.0 {
                assert_eq!(
                    refused, 0,
                    "w={w} {k:?}: input refused with the output always ready"
                );
            }
        }
    }
}

#[test]
fn reference_vectors_parse_as_documented() {
    let by_name = |n: &str| {
        reference_vectors()
            .into_iter()
            .find(|v| v.0 == n)
            .unwrap()
            .1
    };
    let t1 = parse_headers(&by_name("T1"), WINDOW);
    assert_eq!((t1.l3, t1.l4, t1.malformed), (1, 2, 0));
    assert_eq!((t1.src_ip, t1.dst_ip), (0x0a00_1101, 0x0a00_1201));
    assert_eq!(
        (t1.src_port, t1.dst_port, t1.l4_off, t1.ip_end, t1.frame_len),
        (0, 4791, 34, 74, 74)
    );
    let t4 = parse_headers(&by_name("T4"), WINDOW);
    assert_eq!(
        (t4.l3, t4.l4, t4.src_port, t4.dst_port, t4.l4_off, t4.l4_len),
        (2, 2, 0xd1a2, 4791, 54, 48)
    );
    assert_eq!(
        t4.src_ip,
        u128::from("fe80::1".parse::<Ipv6Addr>().unwrap())
    );
    let hello = parse_headers(&by_name("hello"), WINDOW);
    assert_eq!(
        (hello.l4, hello.src_port, hello.dst_port, hello.l4_len),
        (2, 1234, 5678, 13)
    );
    for (name, f) in reference_vectors() {
        assert_eq!(
            parse_headers(&f, WINDOW).malformed,
            malformed::NONE,
            "{name}"
        );
    }
    // The hardware on the same vectors, at 64 bits (the configuration of the matrix test).
    let Some(d) = dut(&eth_hdr_parse(&HdrParseCfg::new(64, 2)).unwrap()) else {
        return;
    };
    let frames: Vec<(Vec<u8>, u64)> = reference_vectors()
        .into_iter()
        .map(|(_, f)| (f, 0))
        .collect();
    let mut sim = d.model.instance();
    reset(&mut sim);
    let k = Knobs {
        seed: 3,
        idle: 0.0,
        backpressure: 0.0,
    };
    let (got, _) = run(&mut sim, k, &frames);
    check(&frames, &got, 2, WINDOW, "reference vectors");
}

/// Two views of different fields, their sinks at very different speeds: each view gives every
/// record, in order, with its fields as the model says; the slow one holds the input (its
/// records pile up), the fast one never waits for it beyond that.
#[test]
fn views_are_independent_streams() {
    use nicgen_tb::record::RecordSink;
    fn fast(m: ParseMeta<u32>) -> ParseMeta<u32> {
        ParseMeta {
            l3: m.l3,
            l4: m.l4,
            ip_sum: m.ip_sum,
            csum_l4_off: m.csum_l4_off,
            frame_len: m.frame_len,
            ..ParseMeta::default()
        }
    }
    fn slow(m: ParseMeta<u32>) -> ParseMeta<u32> {
        ParseMeta { ip_sum: 0, ..m }
    }
    const VIEWS: &[View] = &[
        View {
            name: "fast",
            fields: fast,
        },
        View {
            name: "slow",
            fields: slow,
        },
    ];
    let cfg = HdrParseCfg {
        views: VIEWS,
        fifo_depth: 8,
        ..HdrParseCfg::new(64, 1)
    };
    let Some(d) = dut(&eth_hdr_parse(&cfg).unwrap()) else {
        return;
    };
    lint_clean(&d.gen);
    let mut sim = d.model.instance();
    reset(&mut sim);
    let mut urng = StdRng::seed_from_u64(77);
    let frames: Vec<(Vec<u8>, u64)> = frame_set(77, 600)
        .into_iter()
        .map(|f| (f, urng.gen_range(0..2u64)))
        .collect();
    let sp = StreamPorts::new(&sim, "s_axis").unwrap();
    let mut drv = StreamDriver::new(sp.clone(), 78, 0.1);
    let mut mon = StreamMonitor::new(sp.clone(), 78);
    for (f, u) in &frames {
        drv.push_with_user(f.clone(), *u);
    }
    let mut fast = RecordSink::new(&sim, "m_axis_fast", 79, 0.0).unwrap();
    let mut slow = RecordSink::new(&sim, "m_axis_slow", 80, 0.85).unwrap();
    let (mut lead, mut refused) = (0usize, 0u64);
    run_until_seeded(&mut sim, 81, 2000, |sim| {
        let progressed = step(sim, &mut [&mut drv, &mut mon, &mut fast, &mut slow])?;
        lead = lead.max(fast.items.len().saturating_sub(slow.items.len()));
        if sim.get_bool(sp.tvalid) && !sim.get_bool(sp.tready) {
            refused += 1;
        }
        Ok(Status::new(
            progressed,
            fast.items.len() >= frames.len() && slow.items.len() >= frames.len(),
        ))
    })
    .unwrap();
    for _ in 0..30 {
        step(&mut sim, &mut [&mut drv, &mut mon, &mut fast, &mut slow]).unwrap();
    }
    assert_eq!(
        (fast.items.len(), slow.items.len()),
        (frames.len(), frames.len())
    );
    check_fields(&frames, &fast.items, &VIEWS[0], 1, WINDOW, "fast view");
    check_fields(&frames, &slow.items, &VIEWS[1], 1, WINDOW, "slow view");
    // The fast view ran ahead of the slow one by up to the records a view holds, and the slow
    // view's records held the input.
    assert!(lead >= 4, "the fast view never ran ahead ({lead} records)");
    assert!(
        lead <= 8 + 1,
        "the fast view ran {lead} records ahead of an 8-deep store"
    );
    assert!(refused > 0, "the slow view never held the input");
}

#[test]
fn one_beat_frames_back_to_back() {
    // 1 beat/cycle: N one-beat frames (1-byte frames at 8 bits) go in in N cycles, and each
    // record follows its frame by the documented latency.
    for w in [8u32, 512] {
        let Some(d) = dut(&eth_hdr_parse(&HdrParseCfg::new(w, 0)).unwrap()) else {
            return;
        };
        let bytes = (w / 8) as usize;
        let mut rng = StdRng::seed_from_u64(9);
        let frames: Vec<(Vec<u8>, u64)> = (0..200)
            .map(|i| {
                let f = if w == 512 && i % 2 == 0 {
                    // A real minimum-size IPv4/UDP frame (60 bytes) in one beat.
                    let spec = Spec {
                        tags: vec![],
                        l3: L3::V4 {
                            opts: 0,
                            mf: false,
                            frag_off: 0,
                        },
                        upper: Upper::Udp,
                        payload: 18,
                        pad: 0,
                    };
                    build(&mut rng, &spec)
                } else {
                    (0..bytes).map(|_| rng.gen()).collect()
                };
                (f, 0)
            })
            .collect();
        let mut sim = d.model.instance();
        reset(&mut sim);
        let start = sim.cycles();
        let k = Knobs {
            seed: 11,
            idle: 0.0,
            backpressure: 0.0,
        };
        let (got, refused) = run(&mut sim, k, &frames);
        assert_eq!(refused, 0, "w={w}");
        check(&frames, &got, 0, WINDOW, &format!("w={w} back to back"));
        // `run` steps 30 extra cycles after the last record.
        let cycles = sim.cycles() - start - 30;
        assert!(
            cycles <= 200 + u64::from(LATENCY) + 1,
            "w={w}: 200 one-beat frames took {cycles} cycles"
        );
    }
}

#[test]
fn impossible_parameters_are_rejected() {
    let bad = [
        HdrParseCfg {
            window: 32,
            ..HdrParseCfg::new(64, 0)
        },
        HdrParseCfg {
            window: 2048,
            ..HdrParseCfg::new(64, 0)
        },
        HdrParseCfg {
            fifo_depth: 12,
            ..HdrParseCfg::new(64, 0)
        },
        HdrParseCfg {
            fifo_depth: 2,
            ..HdrParseCfg::new(64, 0)
        },
        HdrParseCfg::new(24, 0),
        HdrParseCfg::new(64, 129),
    ];
    for cfg in bad {
        let e = eth_hdr_parse(&cfg)
            .err()
            .unwrap_or_else(|| panic!("{cfg:?} accepted"));
        assert!(e.to_string().contains("eth_hdr_parse"), "{e}");
    }
    // Other windows and depths elaborate.
    for (w, win, depth) in [(128u32, 64u32, 4u32), (256, 200, 32), (16, 1024, 16)] {
        eth_hdr_parse(&HdrParseCfg {
            window: win,
            fifo_depth: depth,
            ..HdrParseCfg::new(w, 1)
        })
        .unwrap_or_else(|e| panic!("{w}/{win}/{depth}: {e}"));
    }
}

#[test]
fn other_widths_and_windows() {
    // The smallest window, windows that end inside a beat and inside a 4-byte word, a window
    // wider than 32 words; small FIFOs (the credit counter throttles the input instead).
    for (w, window, depth, user_bits) in [
        (16u32, 64u32, 16u32, 0u32),
        (128, 101, 4, 1),
        (32, 250, 8, 0),
    ] {
        let cfg = HdrParseCfg {
            window,
            fifo_depth: depth,
            ..HdrParseCfg::new(w, user_bits)
        };
        let Some(d) = dut(&eth_hdr_parse(&cfg).unwrap()) else {
            return;
        };
        lint_clean(&d.gen);
        let k = Knobs {
            seed: 7000 + u64::from(w),
            idle: 0.3,
            backpressure: 0.3,
        };
        let mut urng = StdRng::seed_from_u64(k.seed);
        let frames: Vec<(Vec<u8>, u64)> = frame_set(k.seed, 600)
            .into_iter()
            .map(|f| {
                (
                    f,
                    if user_bits > 0 {
                        urng.gen_range(0..2)
                    } else {
                        0
                    },
                )
            })
            .collect();
        let mut sim = d.model.instance();
        reset(&mut sim);
        let (got, _) = run(&mut sim, k, &frames);
        check(
            &frames,
            &got,
            user_bits,
            window as usize,
            &format!("w={w} window={window} depth={depth}"),
        );
    }
}

#[test]
fn latency_is_as_documented() {
    // A record is valid LATENCY cycles after the beat that closes the window (tlast for a short
    // frame, the window-full beat for a long one), and not before LATENCY_AFTER_LAST cycles
    // after tlast.
    // The same with tunnel recognition, which joins the record in the existing stages.
    for tunnels in [false, true] {
        let cfg = HdrParseCfg {
            tunnels,
            ..HdrParseCfg::new(64, 2)
        };
        let Some(d) = dut(&eth_hdr_parse(&cfg).unwrap()) else {
            return;
        };
        let mut rng = StdRng::seed_from_u64(5);
        for (len, close_beat) in [(60usize, 7u64), (16 * 8 + 24, 15), (300, 15)] {
            let spec = Spec {
                tags: vec![],
                l3: L3::V4 {
                    opts: 0,
                    mf: false,
                    frag_off: 0,
                },
                upper: Upper::Udp,
                payload: len - 42,
                pad: 0,
            };
            let f = build(&mut rng, &spec);
            assert_eq!(f.len(), len);
            let mut sim = d.model.instance();
            if tunnels {
                let port = sim.port("vxlan_port").unwrap();
                sim.set(port, 4789);
            }
            reset(&mut sim);
            let p = |n: &str| sim.port(n).unwrap();
            let (data, keep, valid, last, mvalid, mready) = (
                p("s_axis_tdata"),
                p("s_axis_tkeep"),
                p("s_axis_tvalid"),
                p("s_axis_tlast"),
                p("m_axis_meta_tvalid"),
                p("m_axis_meta_tready"),
            );
            sim.set_bool(mready, true);
            let beats = len.div_ceil(8);
            let mut seen = None;
            for cyc in 0..beats as u64 + 40 {
                let b = cyc as usize;
                if b < beats {
                    let chunk = &f[8 * b..(8 * b + 8).min(len)];
                    sim.set_bytes_le(data, chunk);
                    sim.set(keep, (1u64 << chunk.len()) - 1);
                    sim.set_bool(last, b + 1 == beats);
                }
                sim.set_bool(valid, b < beats);
                sim.cycle();
                if sim.get_bool(mvalid) && seen.is_none() {
                    seen = Some(cyc);
                }
            }
            // Beat `close_beat` is taken in step `close_beat`; the record shows LATENCY steps later,
            // and LATENCY_AFTER_LAST steps after the `tlast` beat at the earliest.
            let want = (close_beat + u64::from(LATENCY))
                .max(beats as u64 - 1 + u64::from(LATENCY_AFTER_LAST));
            assert_eq!(seen, Some(want), "{len}-byte frame, tunnels {tunnels}");
        }
    }
}

#[test]
fn codes_and_layout_agree_with_the_model() {
    use nicgen_hdl::eth::eth_hdr_parse::malformed as hw;
    use nicgen_model::parse::malformed as m;
    let pairs = [
        (hw::NONE, m::NONE),
        (hw::L2_TRUNC, m::L2_TRUNC),
        (hw::L3_TRUNC, m::L3_TRUNC),
        (hw::IPV4_IHL, m::IPV4_IHL),
        (hw::IPV4_TOTAL_LEN, m::IPV4_TOTAL_LEN),
        (hw::IP_TRUNC, m::IP_TRUNC),
        (hw::IP_VERSION, m::IP_VERSION),
        (hw::EXT_TRUNC, m::EXT_TRUNC),
        (hw::EXT_LIMIT, m::EXT_LIMIT),
        (hw::EXT_WINDOW, m::EXT_WINDOW),
        (hw::L4_TRUNC, m::L4_TRUNC),
        (hw::L4_BAD, m::L4_BAD),
        (hw::L4_WINDOW, m::L4_WINDOW),
    ];
    for (h, mm) in pairs {
        assert_eq!(h, u32::from(mm));
    }
    assert_eq!(
        nicgen_hdl::eth::eth_hdr_parse::MAX_EXT_HEADERS as usize,
        nicgen_model::parse::MAX_EXT_HEADERS
    );
    // The tunnel reasons: 1 + the model's order.
    use nicgen_hdl::eth::eth_hdr_parse::tunnel_bad as tb;
    use nicgen_model::tunnel::Malformed;
    let reasons = [
        (tb::SHORT, Malformed::ShortTunnelHeader),
        (tb::BEYOND_WINDOW, Malformed::BeyondWindow),
        (tb::VXLAN_I_FLAG, Malformed::VxlanIFlagClear),
        (tb::GRE_VERSION, Malformed::GreVersion),
        (tb::GRE_FLAGS, Malformed::GreFlags),
        (tb::GRE_PROTOCOL, Malformed::GreProtocol),
        (tb::INNER_SHORT, Malformed::InnerTooShort),
    ];
    assert_eq!(reasons.len(), Malformed::ALL.len());
    for (h, mm) in reasons {
        assert_eq!(h, u32::from(mm.code()));
    }
    use nicgen_hdl::eth::eth_hdr_parse::tunnel_kind as tk;
    use nicgen_model::tunnel::TunnelKind;
    for (h, k) in [
        (tk::NONE, TunnelKind::None),
        (tk::VXLAN, TunnelKind::Vxlan),
        (tk::NVGRE, TunnelKind::Nvgre),
    ] {
        assert_eq!(h, u32::from(k.code()));
    }
    // Every ParseResult field but `user` is a record field; with the claims 499 bits, with
    // the tunnel's 568.
    assert_eq!(meta_layout(0).width(), 568);
    assert_eq!(meta_layout(3).width(), 571);
    assert_eq!(meta_layout(3).layout().last(), Some(&("user", 568, 3)));
    assert_eq!(
        view_layout(
            &View {
                name: "meta",
                fields: nicgen_hdl::eth::eth_hdr_parse::without_tunnel
            },
            0
        )
        .width(),
        499
    );
    // The TX path's record leaves out what only RSS and the VLAN strip use.
    assert_eq!(view_layout(&CSUM_RECORD[0], 0).width(), 162);
}

/// Inserts `n` 4-byte option words of NOPs into the outer IPv4 header at `l3` (IHL, total
/// length and header checksum fixed).
fn add_ipv4_options(f: &mut Vec<u8>, l3: usize, n: usize) {
    let ihl = usize::from(f[l3] & 0x0F) * 4;
    f.splice(l3 + ihl..l3 + ihl, std::iter::repeat_n(1u8, 4 * n));
    f[l3] = 0x40 | ((ihl / 4 + n) as u8);
    let total = u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]) + 4 * n as u16;
    f[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
    ipv4::Packet::new_unchecked(&mut f[l3..]).fill_checksum();
}

/// Inserts a hop-by-hop header of `8 * (n + 1)` bytes (a PadN option) after the outer IPv6
/// header at `l3` (next header and payload length fixed).
fn add_hop_by_hop(f: &mut Vec<u8>, l3: usize, n: usize) {
    let len = 8 * (n + 1);
    let mut hbh = vec![0u8; len];
    hbh[0] = f[l3 + 6];
    hbh[1] = n as u8;
    hbh[2] = 1; // PadN
    hbh[3] = (len - 4) as u8;
    f.splice(l3 + 40..l3 + 40, hbh);
    f[l3 + 6] = 0;
    let plen = u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]) + len as u16;
    f[l3 + 4..l3 + 6].copy_from_slice(&plen.to_be_bytes());
}

/// VXLAN (to `port`, or sometimes another) and NVGRE frames from the model's encapsulation of
/// random inner frames: IPv4 outer (sometimes with options) or IPv6 (sometimes with a
/// hop-by-hop header long enough to push the tunnel header past the window), with or without
/// a tag; then a share of them broken: a byte of the 16 at the L4 offset replaced (flags,
/// protocol, lengths, ports), the frame cut, or the outer IPv4 marked a fragment.
pub(crate) fn tunnel_frames(seed: u64, n: usize, port: u16) -> Vec<Vec<u8>> {
    use nicgen_model::encap::{encap, EncapContext, EncapKind, OuterIp};
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut spec = random_spec(&mut rng);
        spec.payload = spec.payload.min(200);
        let inner = build(&mut rng, &spec);
        if inner.len() < 14 {
            continue;
        }
        let v6 = rng.gen_bool(0.4);
        let ip = if v6 {
            OuterIp::V6 {
                src: v6addr(&mut rng),
                dst: v6addr(&mut rng),
                hop_limit: 64,
                traffic_class: 0,
                flow_label: rng.gen_range(0..1 << 20),
            }
        } else {
            OuterIp::V4 {
                src: v4addr(&mut rng),
                dst: v4addr(&mut rng),
                ttl: 64,
                tos: 0,
                dont_frag: rng.gen(),
            }
        };
        let kind = if rng.gen_bool(0.5) {
            EncapKind::Vxlan {
                vni: rng.gen_range(0..1 << 24),
                dst_port: if rng.gen_bool(0.9) { port } else { 4790 },
                udp_checksum: rng.gen(),
            }
        } else {
            EncapKind::Nvgre {
                vsid: rng.gen_range(0..1 << 24),
                flow_id: rng.gen(),
            }
        };
        let vlan = rng.gen_bool(0.3).then(|| random_tag(&mut rng));
        let ctx = EncapContext {
            dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            vlan,
            ip,
            kind,
            inner_l3_csum: false,
            inner_l4_csum: false,
        };
        let mut f = encap(&inner, &ctx, rng.gen()).expect("a small inner frame encapsulates");
        let l3 = if vlan.is_some() { 18 } else { 14 };
        if !v6 && rng.gen_bool(0.2) {
            add_ipv4_options(&mut f, l3, rng.gen_range(1..=10));
        }
        if v6 && rng.gen_bool(0.3) {
            add_hop_by_hop(&mut f, l3, rng.gen_range(0..=8));
        }
        let l4 = parse_headers(&f, f.len().max(64)).l4_off as usize;
        match rng.gen_range(0..10) {
            0..=2 if l4 > 0 => {
                let i = l4 + rng.gen_range(0..16);
                if i < f.len() {
                    f[i] = rng.gen();
                }
            }
            3 => {
                let cut = rng.gen_range(14..=f.len());
                f.truncate(cut);
            }
            4 if !v6 => {
                f[l3 + 6] |= 0x20;
                ipv4::Packet::new_unchecked(&mut f[l3..]).fill_checksum();
            }
            // The datagram shortened to a few bytes past the L4 offset, its lengths rewritten
            // to match: a tunnel header or an inner frame too short.
            5 if l4 > 0 => {
                let end = (l4 + rng.gen_range(0..=32)).min(f.len());
                f.truncate(end);
                if v6 {
                    let plen = (end - l3 - 40) as u16;
                    f[l3 + 4..l3 + 6].copy_from_slice(&plen.to_be_bytes());
                } else {
                    let total = (end - l3) as u16;
                    f[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
                    ipv4::Packet::new_unchecked(&mut f[l3..]).fill_checksum();
                }
                if matches!(kind, EncapKind::Vxlan { .. }) && end >= l4 + 8 {
                    f[l4 + 4..l4 + 6].copy_from_slice(&((end - l4) as u16).to_be_bytes());
                    f[l4 + 6..l4 + 8].fill(0);
                }
            }
            _ => {}
        }
        out.push(f);
    }
    out
}

/// The record's tunnel fields as the model's `parse_tunnel` gives them.
fn tunnel_fields(f: &[u8], port: u16) -> [u128; 6] {
    use nicgen_model::tunnel::{parse_tunnel, TunnelConfig};
    let t = parse_tunnel(
        f,
        &TunnelConfig {
            vxlan_port: port,
            window: WINDOW,
        },
    );
    let bad = t.malformed.map_or(0, |m| m.code().into());
    let (off, end) = t.inner.map_or((0, 0), |i| (i.off as u128, i.end as u128));
    [
        t.kind.code().into(),
        bad,
        t.id.into(),
        t.flow_id.into(),
        off,
        end,
    ]
}

#[test]
fn tunnels_match_the_model() {
    let view = &ONE_RECORD[0];
    for (wi, (w, port)) in [(8u32, 4789u16), (64, 4789), (512, 8472)]
        .into_iter()
        .enumerate()
    {
        let cfg = HdrParseCfg {
            tunnels: true,
            ..HdrParseCfg::new(w, 0)
        };
        let def = eth_hdr_parse(&cfg).unwrap();
        let Some(d) = dut(&def) else {
            return;
        };
        lint_clean(&d.gen);
        for k in matrix(80 + wi as u64) {
            let n = if w == 8 { 600 } else { 2000 };
            let mut frames: Vec<(Vec<u8>, u64)> = tunnel_frames(k.seed, n, port)
                .into_iter()
                .map(|f| (f, 0))
                .collect();
            // Ordinary frames between them: no tunnel.
            frames.extend(frame_set(k.seed, 200).into_iter().map(|f| (f, 0)));
            let mut rng = StdRng::seed_from_u64(k.seed);
            for i in (1..frames.len()).rev() {
                frames.swap(i, rng.gen_range(0..=i));
            }
            // Every kind and every reason is reached.
            let want: Vec<[u128; 6]> = frames.iter().map(|(f, _)| tunnel_fields(f, port)).collect();
            for kind in 0..3 {
                assert!(want.iter().any(|t| t[0] == kind), "kind {kind} not reached");
            }
            for bad in 1..=7 {
                assert!(want.iter().any(|t| t[1] == bad), "reason {bad} not reached");
            }
            let mut sim = d.model.instance();
            let p = sim.port("vxlan_port").unwrap();
            sim.set(p, port.into());
            reset(&mut sim);
            let (got, _) = run(&mut sim, k, &frames);
            check_fields(
                &frames,
                &got,
                view,
                0,
                WINDOW,
                &format!("tunnels w={w} {k:?}"),
            );
            let s = view_layout(view, 0);
            for (i, ((f, _), rec)) in frames.iter().zip(&got).enumerate() {
                let v = s.decode(rec);
                let have = [
                    v.tunnel,
                    v.tunnel_bad,
                    v.tunnel_id,
                    v.flow_id,
                    v.inner_off,
                    v.inner_end,
                ];
                assert_eq!(
                    have,
                    want[i],
                    "tunnels w={w} {k:?}: frame {i} ({} bytes; kind, reason, id, flow, inner \
                     off, end): {:02x?}",
                    f.len(),
                    &f[..f.len().min(96)]
                );
            }
        }
    }
}
