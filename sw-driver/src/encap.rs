//! Encapsulation contexts on transmit: the outer headers an SQ created with a context puts in
//! front of every frame it sends, encoded as the 16 `encap.CTX` words of the `encap_ctx`
//! layout ([`crate::regs::desc::encap_ctx`]); [`crate::device::Device::program_encap`] writes
//! them.
//!
//! The device computes what depends on the frame: the outer lengths and checksums, the IPv4 ID
//! (a per-context counter, restarted by every write of the context) and the UDP source port (a
//! hash of the inner flow). The outer frame has no VLAN tag of its own: the TX path's VLAN
//! insert tags it.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::desc::DescError;
use crate::regs::desc::encap_ctx;
use crate::regs::DescField;

/// The outer IP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OuterIp {
    V4 {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        ttl: u8,
        tos: u8,
        /// Don't fragment.
        dont_frag: bool,
    },
    V6 {
        src: Ipv6Addr,
        dst: Ipv6Addr,
        hop_limit: u8,
        traffic_class: u8,
        /// 20 bits.
        flow_label: u32,
    },
}

/// The tunnel header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tunnel {
    /// VXLAN over UDP.
    Vxlan {
        /// VNI, 24 bits.
        vni: u32,
        /// Outer UDP destination port (4789 is IANA's).
        dst_port: u16,
        /// Compute the outer UDP checksum over IPv4 (over IPv6 it always is).
        udp_checksum: bool,
    },
    /// NVGRE (GRE with key, protocol 0x6558).
    Nvgre {
        /// VSID, 24 bits.
        vsid: u32,
        flow_id: u8,
    },
}

/// One encapsulation context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EncapContext {
    /// Outer destination MAC (the next hop).
    pub dst_mac: [u8; 6],
    /// Outer source MAC.
    pub src_mac: [u8; 6],
    pub ip: OuterIp,
    pub tunnel: Tunnel,
}

/// `value` must fit `field` (`what` names it in the error).
fn fits(what: &'static str, field: DescField, value: u64) -> Result<u64, DescError> {
    let limit = (1u64 << field.bits) - 1;
    if value > limit {
        return Err(DescError::FieldTooLarge { what, value, limit });
    }
    Ok(value)
}

impl EncapContext {
    /// The context's 16 `encap.CTX` words (word `w` to be written at `CTX + 4 (16 c + w)`).
    /// Fails when the VNI/VSID or the flow label does not fit its field.
    pub fn words(&self) -> Result<[u32; encap_ctx::SIZE / 4], DescError> {
        let mut b = [0u8; encap_ctx::SIZE];
        let mut put = |f: DescField, v: u64| f.set(&mut b, v);
        let (d, s) = (self.dst_mac, self.src_mac);
        put(encap_ctx::DST_MAC_HI, be(&d[..4]));
        put(encap_ctx::DST_MAC_LO, be(&d[4..]));
        put(encap_ctx::SRC_MAC_HI, be(&s[..2]));
        put(encap_ctx::SRC_MAC_LO, be(&s[2..]));
        match self.ip {
            OuterIp::V4 {
                src,
                dst,
                ttl,
                tos,
                dont_frag,
            } => {
                put(encap_ctx::TTL, ttl.into());
                put(encap_ctx::TOS, tos.into());
                put(encap_ctx::DF, dont_frag.into());
                put(encap_ctx::SRC_ADDR_LO, u32::from(src).into());
                put(encap_ctx::DST_ADDR_LO, u32::from(dst).into());
            }
            OuterIp::V6 {
                src,
                dst,
                hop_limit,
                traffic_class,
                flow_label,
            } => {
                let label = fits("IPv6 flow label", encap_ctx::FLOW_LABEL, flow_label.into())?;
                put(encap_ctx::IPV6, 1);
                put(encap_ctx::TTL, hop_limit.into());
                put(encap_ctx::TOS, traffic_class.into());
                put(encap_ctx::FLOW_LABEL, label);
                let (s, d) = (src.octets(), dst.octets());
                put(encap_ctx::SRC_ADDR_HI, be(&s[..8]));
                put(encap_ctx::SRC_ADDR_LO, be(&s[8..]));
                put(encap_ctx::DST_ADDR_HI, be(&d[..8]));
                put(encap_ctx::DST_ADDR_LO, be(&d[8..]));
            }
        }
        match self.tunnel {
            Tunnel::Vxlan {
                vni,
                dst_port,
                udp_checksum,
            } => {
                put(
                    encap_ctx::TUNNEL_ID,
                    fits("VNI", encap_ctx::TUNNEL_ID, vni.into())?,
                );
                put(encap_ctx::UDP_PORT, dst_port.into());
                put(encap_ctx::UDP_CHECKSUM, udp_checksum.into());
            }
            Tunnel::Nvgre { vsid, flow_id } => {
                put(encap_ctx::NVGRE, 1);
                put(
                    encap_ctx::TUNNEL_ID,
                    fits("VSID", encap_ctx::TUNNEL_ID, vsid.into())?,
                );
                put(encap_ctx::FLOW_ID, flow_id.into());
            }
        }
        // Register words are the layout's 4-byte big-endian containers (as `qcmd_in`).
        let mut words = [0u32; encap_ctx::SIZE / 4];
        for (w, c) in words.iter_mut().zip(b.chunks_exact(4)) {
            *w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(words)
    }
}

/// Big-endian value of up to 8 bytes.
fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |v, &b| v << 8 | u64::from(b))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// wire-formats.md §2.5's VXLAN example's outer side: 02:..:01 → 02:..:02, 172.16.0.1 →
    /// 172.16.0.2 TTL 64 DF, UDP to 4789 with checksum, VNI 0x123456.
    pub(crate) fn vxlan() -> EncapContext {
        EncapContext {
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_mac: [2, 0, 0, 0, 0, 1],
            ip: OuterIp::V4 {
                src: Ipv4Addr::new(172, 16, 0, 1),
                dst: Ipv4Addr::new(172, 16, 0, 2),
                ttl: 64,
                tos: 0,
                dont_frag: true,
            },
            tunnel: Tunnel::Vxlan {
                vni: 0x123456,
                dst_port: 4789,
                udp_checksum: true,
            },
        }
    }

    #[test]
    fn words_follow_the_ctx_layout() {
        // encap.CTX: 0 dst MAC 0-3; 1 dst MAC 4-5 | src MAC 0-1; 2 src MAC 2-5; 3 TTL, TOS,
        // flags (IPv6 16, NVGRE 17, UDP checksum 18, DF 19); 4 VNI | FlowID << 24; 5 UDP port;
        // 6 flow label; 8-11 source, 12-15 destination (IPv4 in 11 and 15).
        let w = vxlan().words().unwrap();
        let mut want = [0u32; 16];
        want[0] = 0x0200_0000;
        want[1] = 0x0002_0200;
        want[2] = 0x0000_0001;
        want[3] = 64 | 1 << 18 | 1 << 19;
        want[4] = 0x12_3456;
        want[5] = 4789;
        want[11] = 0xAC10_0001;
        want[15] = 0xAC10_0002;
        assert_eq!(w, want);

        let v6 = EncapContext {
            ip: OuterIp::V6 {
                src: "2001:db8:ffff::1".parse().unwrap(),
                dst: "2001:db8:ffff::2".parse().unwrap(),
                hop_limit: 9,
                traffic_class: 0xB8,
                flow_label: 0xABCDE,
            },
            tunnel: Tunnel::Nvgre {
                vsid: 0x123456,
                flow_id: 0xAB,
            },
            ..vxlan()
        };
        let w = v6.words().unwrap();
        assert_eq!(w[3], 9 | 0xB8 << 8 | 1 << 16 | 1 << 17);
        assert_eq!(w[4], 0xAB12_3456);
        assert_eq!((w[5], w[6]), (0, 0xABCDE));
        assert_eq!(w[8..12], [0x2001_0db8, 0xFFFF_0000, 0, 1]);
        assert_eq!(w[12..16], [0x2001_0db8, 0xFFFF_0000, 0, 2]);
    }

    #[test]
    fn fields_that_do_not_fit_are_refused() {
        let big_vni = EncapContext {
            tunnel: Tunnel::Vxlan {
                vni: 1 << 24,
                dst_port: 4789,
                udp_checksum: false,
            },
            ..vxlan()
        };
        assert_eq!(
            big_vni.words(),
            Err(DescError::FieldTooLarge {
                what: "VNI",
                value: 1 << 24,
                limit: (1 << 24) - 1
            })
        );
    }
}
