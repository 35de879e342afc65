//! TCP segmentation offload (mlx5 LSO, Linux TSO): where a super-frame's headers are, and the
//! Ethernet segment's software-parser fields that tell the device (`docs/wire-formats.md`
//! §2.5, §4.4).
//!
//! An LSO send carries every header through the (inner) TCP header inline in the WQE
//! (`inline_hdr_sz` = [`LsoHeaders::hdr_len`]) and the payload in data segments; the device
//! replicates the headers for every `mss` bytes of payload and rewrites the per-segment fields.
//! The driver finds the headers itself ([`LsoHeaders::parse`]): a plain TCP frame, or TCP
//! inside VXLAN (UDP to the VXLAN port) or NVGRE (GRE with key, protocol 0x6558), each IP
//! layer IPv4 (with options) or IPv6 (without extension headers), at most one 802.1Q/802.1ad
//! tag per Ethernet header.

use thiserror::Error;

use crate::desc::Swp;
use crate::regs::consts::swp_flags;

const ETH_HLEN: usize = 14;
const VLAN_HLEN: usize = 4;
const IPV6_HLEN: usize = 40;
const UDP_HLEN: usize = 8;
const VXLAN_HLEN: usize = 8;
const NVGRE_HLEN: usize = 8;
const TCP_MIN_HLEN: usize = 20;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: [u16; 2] = [0x8100, 0x88A8];
const ETHERTYPE_TEB: u16 = 0x6558;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_GRE: u8 = 47;
/// GRE flags and version with only the key present (NVGRE).
const NVGRE_FLAGS: u16 = 0x2000;
/// The software parser's offsets are one byte of 2-byte units.
const SWP_MAX_OFFSET: usize = 2 * 0xFF;

/// Why a frame cannot be sent as an LSO super-frame.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LsoError {
    /// The frame ends before its headers do.
    #[error("frame of {len} bytes ends inside its headers ({need} bytes needed)")]
    Truncated { len: usize, need: usize },
    /// Headers this driver does not segment.
    #[error("not an LSO super-frame: {0}")]
    Unsupported(&'static str),
    /// A header offset the software parser cannot carry (odd, or past 510 bytes).
    #[error(
        "header at byte {offset}: the software parser takes even offsets up to {SWP_MAX_OFFSET}"
    )]
    Offset { offset: usize },
    /// No payload after the headers.
    #[error("frame of {len} bytes has no payload after its {hdr_len} header bytes")]
    NoPayload { len: usize, hdr_len: usize },
    /// One segment (headers and `mss` payload bytes) is longer than a send may be.
    #[error(
        "a segment of {hdr_len} header and {mss} payload bytes exceeds a send of {max_len} bytes"
    )]
    SegmentTooLong {
        hdr_len: usize,
        mss: usize,
        max_len: usize,
    },
}

/// The tunnel around the TCP frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LsoTunnel {
    /// A plain TCP frame.
    #[default]
    None,
    /// VXLAN: outer UDP to the VXLAN port.
    Vxlan,
    /// NVGRE: outer GRE with key, protocol 0x6558.
    Nvgre,
}

/// Where a super-frame's headers are, in bytes from its start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LsoHeaders {
    /// The outer IP header (tunnels; 0 otherwise).
    pub outer_l3: usize,
    /// The outer UDP (VXLAN) or GRE (NVGRE) header (tunnels; 0 otherwise).
    pub outer_l4: usize,
    /// The inner (or only) IP header.
    pub l3: usize,
    /// The TCP header.
    pub l4: usize,
    /// The first payload byte: the end of the TCP header (the inline header's length).
    pub hdr_len: usize,
    pub tunnel: LsoTunnel,
    /// The outer IP header is IPv6.
    pub outer_v6: bool,
    /// The inner (or only) IP header is IPv6.
    pub v6: bool,
}

fn be16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

/// `frame` must hold `need` bytes.
fn need(frame: &[u8], need: usize) -> Result<(), LsoError> {
    if frame.len() < need {
        return Err(LsoError::Truncated {
            len: frame.len(),
            need,
        });
    }
    Ok(())
}

/// The IP header after the Ethernet header at `at`: its offset, whether IPv6, its length and
/// protocol.
fn ip_after_eth(frame: &[u8], at: usize) -> Result<(usize, bool, usize, u8), LsoError> {
    need(frame, at + ETH_HLEN)?;
    let mut l3 = at + ETH_HLEN;
    let mut ethertype = be16(frame, at + 12);
    if ETHERTYPE_VLAN.contains(&ethertype) {
        need(frame, l3 + VLAN_HLEN)?;
        ethertype = be16(frame, at + 16);
        l3 += VLAN_HLEN;
    }
    match ethertype {
        ETHERTYPE_IPV4 => {
            need(frame, l3 + 20)?;
            let (version, ihl) = (frame[l3] >> 4, (frame[l3] & 0xF) as usize * 4);
            if version != 4 || ihl < 20 {
                return Err(LsoError::Unsupported("malformed IPv4 header"));
            }
            need(frame, l3 + ihl)?;
            Ok((l3, false, ihl, frame[l3 + 9]))
        }
        ETHERTYPE_IPV6 => {
            need(frame, l3 + IPV6_HLEN)?;
            if frame[l3] >> 4 != 6 {
                return Err(LsoError::Unsupported("malformed IPv6 header"));
            }
            Ok((l3, true, IPV6_HLEN, frame[l3 + 6]))
        }
        _ => Err(LsoError::Unsupported("neither IPv4 nor IPv6")),
    }
}

impl LsoHeaders {
    /// The headers of super-frame `frame`, VXLAN being UDP to `vxlan_port`. The TCP header
    /// must end before the frame does (an LSO send has payload).
    pub fn parse(frame: &[u8], vxlan_port: u16) -> Result<LsoHeaders, LsoError> {
        let (l3, v6, ip_len, proto) = ip_after_eth(frame, 0)?;
        let outer_l4 = l3 + ip_len;
        let tunnel = match proto {
            PROTO_TCP => LsoTunnel::None,
            PROTO_UDP => {
                need(frame, outer_l4 + UDP_HLEN)?;
                if be16(frame, outer_l4 + 2) != vxlan_port {
                    return Err(LsoError::Unsupported("UDP, not to the VXLAN port"));
                }
                LsoTunnel::Vxlan
            }
            PROTO_GRE => {
                need(frame, outer_l4 + NVGRE_HLEN)?;
                if be16(frame, outer_l4) != NVGRE_FLAGS
                    || be16(frame, outer_l4 + 2) != ETHERTYPE_TEB
                {
                    return Err(LsoError::Unsupported("GRE that is not NVGRE"));
                }
                LsoTunnel::Nvgre
            }
            _ => Err(LsoError::Unsupported(
                "neither TCP nor a VXLAN/NVGRE tunnel",
            ))?,
        };
        let mut h = LsoHeaders {
            l3,
            l4: outer_l4,
            v6,
            tunnel,
            ..LsoHeaders::default()
        };
        if tunnel != LsoTunnel::None {
            let inner = outer_l4
                + match tunnel {
                    LsoTunnel::Vxlan => UDP_HLEN + VXLAN_HLEN,
                    _ => NVGRE_HLEN,
                };
            let (il3, iv6, ip_len, proto) = ip_after_eth(frame, inner)?;
            if proto != PROTO_TCP {
                return Err(LsoError::Unsupported("the inner frame is not TCP"));
            }
            h = LsoHeaders {
                outer_l3: l3,
                outer_l4,
                l3: il3,
                l4: il3 + ip_len,
                outer_v6: v6,
                v6: iv6,
                tunnel,
                hdr_len: 0,
            };
        }
        need(frame, h.l4 + TCP_MIN_HLEN)?;
        let doff = (frame[h.l4 + 12] >> 4) as usize * 4;
        if doff < TCP_MIN_HLEN {
            return Err(LsoError::Unsupported("malformed TCP header"));
        }
        h.hdr_len = h.l4 + doff;
        need(frame, h.hdr_len)?;
        if frame.len() == h.hdr_len {
            return Err(LsoError::NoPayload {
                len: frame.len(),
                hdr_len: h.hdr_len,
            });
        }
        Ok(h)
    }

    /// The Ethernet segment's software-parser fields for these headers, as mlx5e writes them:
    /// tunnelled, the outer IP and UDP/GRE headers and the inner IP and TCP headers, with
    /// OUTER_L4_UDP for VXLAN and the IPv6 flags of both layers; plain, the IP and TCP headers
    /// in the outer fields with OUTER_L3_IPV6 for IPv6.
    pub fn swp(&self) -> Result<Swp, LsoError> {
        let unit = |offset: usize| {
            if !offset.is_multiple_of(2) || offset > SWP_MAX_OFFSET {
                return Err(LsoError::Offset { offset });
            }
            Ok((offset / 2) as u8)
        };
        let flag = |on: bool, bit: u32| if on { bit as u8 } else { 0 };
        Ok(match self.tunnel {
            LsoTunnel::None => Swp {
                outer_l4: unit(self.l4)?,
                outer_l3: unit(self.l3)?,
                inner_l4: 0,
                inner_l3: 0,
                flags: flag(self.v6, swp_flags::OUTER_L3_IPV6),
            },
            t => Swp {
                outer_l4: unit(self.outer_l4)?,
                outer_l3: unit(self.outer_l3)?,
                inner_l4: unit(self.l4)?,
                inner_l3: unit(self.l3)?,
                flags: flag(t == LsoTunnel::Vxlan, swp_flags::OUTER_L4_UDP)
                    | flag(self.outer_v6, swp_flags::OUTER_L3_IPV6)
                    | flag(self.v6, swp_flags::INNER_L3_IPV6),
            },
        })
    }
}

/// A send's TCP segmentation request ([`crate::netdev::TxOffload::lso`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LsoRequest {
    /// Payload bytes per segment (1 to the device's `max_mss`).
    pub mss: u16,
    /// Where the super-frame's headers are.
    pub headers: LsoHeaders,
}

impl LsoRequest {
    /// Segment `frame` into `mss`-byte payloads, its headers found by [`LsoHeaders::parse`]
    /// (VXLAN on UDP port `vxlan_port`).
    pub fn for_frame(frame: &[u8], mss: u16, vxlan_port: u16) -> Result<LsoRequest, LsoError> {
        Ok(LsoRequest {
            mss,
            headers: LsoHeaders::parse(frame, vxlan_port)?,
        })
    }

    /// `frame` as LSO sends of at most `max_len` bytes each (a device's largest LSO send,
    /// `DeviceInfo::max_lso`, is below Linux's BIG TCP super-frames): the payload cut after whole segments, each part behind a
    /// copy of the headers with what the device's segmentation reads from them moved on to
    /// the part's first segment, so that the parts' segments are the whole send's: the TCP
    /// sequence number (+ the payload before the part), the inner and outer IPv4 IDs (+ the
    /// segments before it), CWR only in the first part, FIN and PSH only in the last. The
    /// lengths and checksums are the device's to write. One part (the frame itself) when it
    /// fits.
    pub fn split(&self, frame: &[u8], max_len: usize) -> Result<Vec<Vec<u8>>, LsoError> {
        let h = &self.headers;
        let mss = usize::from(self.mss);
        if frame.len() <= max_len {
            return Ok(vec![frame.to_vec()]);
        }
        if h.hdr_len + mss > max_len {
            return Err(LsoError::SegmentTooLong {
                hdr_len: h.hdr_len,
                mss,
                max_len,
            });
        }
        let per = (max_len - h.hdr_len) / mss * mss;
        let payload = &frame[h.hdr_len..];
        let parts = payload.len().div_ceil(per);
        let add16 = |f: &mut [u8], at: usize, n: usize| {
            let v = be16(f, at).wrapping_add(n as u16);
            f[at..at + 2].copy_from_slice(&v.to_be_bytes());
        };
        Ok(payload
            .chunks(per)
            .enumerate()
            .map(|(k, chunk)| {
                let mut f = Vec::with_capacity(h.hdr_len + chunk.len());
                f.extend_from_slice(&frame[..h.hdr_len]);
                f.extend_from_slice(chunk);
                let (before, segs) = (k * per, k * per / mss);
                let seq = u32::from_be_bytes([f[h.l4 + 4], f[h.l4 + 5], f[h.l4 + 6], f[h.l4 + 7]])
                    .wrapping_add(before as u32);
                f[h.l4 + 4..h.l4 + 8].copy_from_slice(&seq.to_be_bytes());
                if !h.v6 {
                    add16(&mut f, h.l3 + 4, segs);
                }
                if h.tunnel != LsoTunnel::None && !h.outer_v6 {
                    add16(&mut f, h.outer_l3 + 4, segs);
                }
                const CWR: u8 = 0x80;
                const PSH_FIN: u8 = 0x09;
                if k > 0 {
                    f[h.l4 + 13] &= !CWR;
                }
                if k + 1 < parts {
                    f[h.l4 + 13] &= !PSH_FIN;
                }
                f
            })
            .collect())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    /// wire-formats.md §2.5's VXLAN example: segment 0's headers (outer Ethernet through the
    /// inner TCP header, 104 bytes) and its first payload bytes.
    pub(crate) fn vxlan_example() -> Vec<u8> {
        hex("02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 00
             04 42 20 00 40 00 40 11 be 87 ac 10 00 01 ac 10
             00 02 c8 22 12 b5 04 2e 61 04 08 00 00 00 12 34
             56 00 02 00 00 00 00 bb 02 00 00 00 00 aa 08 00
             45 00 04 10 10 00 40 00 40 06 10 e4 0a 01 01 01
             0a 01 01 02 9c 40 00 50 00 00 03 e8 00 00 00 01
             50 90 02 00 dc 29 00 00 03 0a 11 18 1f 26 2d 34")
    }

    /// The NVGRE variant's outer IP and GRE headers around an IPv6/TCP inner frame with an
    /// 802.1Q tag.
    fn nvgre_v6() -> Vec<u8> {
        let mut f = hex("02 00 00 00 00 02 02 00 00 00 00 01 08 00");
        f.extend(hex(
            "45 00 00 52 30 00 40 00 40 2f b2 59 ac 10 00 01 ac 10 00 02",
        ));
        f.extend(hex("20 00 65 58 12 34 56 ab"));
        f.extend(hex("02 00 00 00 00 bb 02 00 00 00 00 aa 81 00 00 05 86 dd"));
        let mut ip6 = vec![0u8; 40];
        ip6[0] = 0x60;
        ip6[6] = PROTO_TCP;
        f.extend(ip6);
        let mut tcp = vec![0u8; 32];
        tcp[12] = 0x80; // 32-byte header (options)
        f.extend(tcp);
        f.extend([1, 2, 3]);
        f
    }

    #[test]
    fn finds_the_worked_examples_headers_and_its_software_parser_fields() {
        let f = vxlan_example();
        let h = LsoHeaders::parse(&f, 4789).unwrap();
        assert_eq!(
            h,
            LsoHeaders {
                outer_l3: 14,
                outer_l4: 34,
                l3: 64,
                l4: 84,
                hdr_len: 104,
                tunnel: LsoTunnel::Vxlan,
                outer_v6: false,
                v6: false,
            }
        );
        assert_eq!(
            h.swp().unwrap(),
            Swp {
                outer_l4: 17,
                outer_l3: 7,
                inner_l4: 42,
                inner_l3: 32,
                flags: 0x20,
            }
        );
        // On another VXLAN port it is plain UDP: not segmentable.
        assert!(matches!(
            LsoHeaders::parse(&f, 8472),
            Err(LsoError::Unsupported(_))
        ));
    }

    #[test]
    fn plain_frames_put_their_headers_in_the_outer_fields() {
        // The worked example's inner frame alone.
        let f = vxlan_example()[50..].to_vec();
        let h = LsoHeaders::parse(&f, 4789).unwrap();
        assert_eq!(
            (h.l3, h.l4, h.hdr_len, h.tunnel),
            (14, 34, 54, LsoTunnel::None)
        );
        let s = h.swp().unwrap();
        assert_eq!(
            s,
            Swp {
                outer_l4: 17,
                outer_l3: 7,
                ..Swp::default()
            }
        );
        let v6 = LsoHeaders { v6: true, ..h };
        assert_eq!(v6.swp().unwrap().flags, 0x10);
    }

    #[test]
    fn nvgre_over_ipv4_around_a_tagged_ipv6_frame() {
        let f = nvgre_v6();
        let h = LsoHeaders::parse(&f, 4789).unwrap();
        // Inner Ethernet at 42, its tag, IPv6 at 60, TCP at 100 with 32 header bytes.
        assert_eq!(
            (h.outer_l3, h.outer_l4, h.l3, h.l4, h.hdr_len),
            (14, 34, 60, 100, 132)
        );
        assert_eq!(
            (h.tunnel, h.outer_v6, h.v6),
            (LsoTunnel::Nvgre, false, true)
        );
        assert_eq!(h.swp().unwrap().flags, 0x01);
    }

    #[test]
    fn refuses_what_it_cannot_segment() {
        let f = vxlan_example();
        assert_eq!(
            LsoHeaders::parse(&f[..100], 4789),
            Err(LsoError::Truncated {
                len: 100,
                need: 104
            })
        );
        assert_eq!(
            LsoHeaders::parse(&f[..104], 4789),
            Err(LsoError::NoPayload {
                len: 104,
                hdr_len: 104
            })
        );
        let mut udp = f[50..].to_vec();
        udp[14 + 9] = PROTO_UDP;
        assert!(matches!(
            LsoHeaders::parse(&udp, 4789),
            Err(LsoError::Unsupported(_))
        ));
        let odd = LsoHeaders {
            l4: 35,
            ..LsoHeaders::parse(&f[50..], 4789).unwrap()
        };
        assert_eq!(odd.swp(), Err(LsoError::Offset { offset: 35 }));
    }
}
