//! TX offloads on bytes: checksum insertion as mlx5 `cs_flags` asks for it.
//!
//! The offsets come from the header parse (`crate::parse` in the full pipeline, or the test's
//! own construction); this module only writes fields.

use crate::checksum::{combine, pseudo_header, sum};
use crate::ip::IpProtocol;
use crate::parse::ParseResult;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Transport of a frame, for checksum insertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4 {
    /// TCP (checksum at +16).
    Tcp,
    /// UDP (checksum at +6).
    Udp,
}

/// Where the headers of a frame are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offsets {
    /// IPv4 (`Some(true)`), IPv6 (`Some(false)`) or not IP.
    pub ipv4: Option<bool>,
    /// The transport, when TCP or UDP.
    pub l4: Option<L4>,
    /// First byte of the IP header.
    pub l3_off: usize,
    /// First byte of the TCP/UDP header.
    pub l4_off: usize,
    /// End of the IP datagram, clipped to the frame.
    pub end: usize,
}

impl Offsets {
    /// The offsets a header parse found: IP only when the IP header is well formed, TCP/UDP
    /// only when the L4 header is (fragments have none).
    pub fn from_parse(p: &ParseResult) -> Offsets {
        use crate::parse::{L3_IPV4, L3_IPV6, L4_TCP, L4_UDP};
        let ip = p.l3 == L3_IPV4 || p.l3 == L3_IPV6;
        Offsets {
            ipv4: ip.then_some(p.l3 == L3_IPV4),
            l4: match p.l4 {
                L4_TCP => Some(L4::Tcp),
                L4_UDP => Some(L4::Udp),
                _ => None,
            },
            l3_off: p.l3_off as usize,
            l4_off: p.l4_off as usize,
            end: p.ip_end as usize,
        }
    }
}

/// The frame with the IPv4 header checksum (`do_l3`, IPv4 only) and the TCP/UDP checksum
/// (`do_l4`, TCP or UDP only) recomputed over the fields as zero; a UDP checksum of 0 is sent as
/// 0xFFFF. Fields that do not apply are left as they are.
pub fn insert_checksums(frame: &[u8], o: &Offsets, do_l3: bool, do_l4: bool) -> Vec<u8> {
    let mut f = frame.to_vec();
    let Some(v4) = o.ipv4 else { return f };
    if do_l3 && v4 {
        f[o.l3_off + 10] = 0;
        f[o.l3_off + 11] = 0;
        let ck = !sum(&f[o.l3_off..o.l4_off]);
        f[o.l3_off + 10..o.l3_off + 12].copy_from_slice(&ck.to_be_bytes());
    }
    if let (true, Some(l4)) = (do_l4, o.l4) {
        let at = o.l4_off + if l4 == L4::Tcp { 16 } else { 6 };
        f[at] = 0;
        f[at + 1] = 0;
        let (src, dst) = if v4 {
            let a =
                |k: usize| IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(&f[k..k + 4]).unwrap()));
            (a(o.l3_off + 12), a(o.l3_off + 16))
        } else {
            let a =
                |k: usize| IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&f[k..k + 16]).unwrap()));
            (a(o.l3_off + 8), a(o.l3_off + 24))
        };
        let proto = IpProtocol::from(if l4 == L4::Tcp { 6u8 } else { 17u8 });
        let ps = pseudo_header(src, dst, proto, (o.end - o.l4_off) as u32);
        let mut ck = !combine(&[ps, sum(&f[o.l4_off..o.end])]);
        if l4 == L4::Udp && ck == 0 {
            ck = 0xFFFF;
        }
        f[at..at + 2].copy_from_slice(&ck.to_be_bytes());
    }
    f
}

/// What the host asks for one frame (mlx5 Ethernet segment: `cs_flags`, VLAN insert).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxRequest {
    /// `cs_flags` L3_CSUM: IPv4 header checksum.
    pub csum_l3: bool,
    /// `cs_flags` L4_CSUM: TCP/UDP checksum.
    pub csum_l4: bool,
    /// Insert an 802.1Q tag (TPID 0x8100) with this TCI after the MAC addresses.
    pub vlan_tci: Option<u16>,
    /// TCP segmentation (mlx5 LSO): the frame is a super-frame, cut into segments of this
    /// many payload bytes ([`crate::tso::tso`]).
    pub mss: Option<usize>,
    /// Encapsulate every (segment) frame in these outer headers ([`crate::encap::encap`]; its
    /// VLAN tag, if any, is ignored: the path's VLAN insert tags the outer frame).
    pub encap: Option<crate::encap::EncapContext>,
    /// The send engine aborted this LSO send after its first bytes (`frame`) had left, with
    /// one byte more on its last beat ([`tx_frames`]).
    pub aborted: bool,
}

/// The checksum part of the TX path: headers found by [`crate::parse::parse_headers`] with
/// `window`, then [`insert_checksums`]; the IPv4 checksum is written only for a well-formed IPv4
/// header, the L4 checksum (`csum_l4`) only for a well-formed TCP/UDP header that is not in a
/// fragment.
pub fn checksum_offload(frame: &[u8], csum_l3: bool, csum_l4: bool, window: usize) -> Vec<u8> {
    let p = crate::parse::parse_headers(frame, window);
    insert_checksums(frame, &Offsets::from_parse(&p), csum_l3, csum_l4 && !p.frag)
}

/// The whole TX path on bytes: the frame as it goes on the wire (FCS included).
///
/// Headers are found by the same parse as RX ([`crate::parse::parse_headers`] with `window`);
/// the IPv4 checksum is written only for a well-formed IPv4 header, the L4 checksum only for a
/// well-formed TCP/UDP header that is not in a fragment; then the VLAN tag is inserted after the
/// MAC addresses (a frame shorter than 12 bytes has no place for it and goes without), the
/// frame padded to 60 bytes and the FCS appended.
pub fn tx_frame(frame: &[u8], req: &TxRequest, window: usize) -> Vec<u8> {
    let mut f = checksum_offload(frame, req.csum_l3, req.csum_l4, window);
    if let Some(tci) = req.vlan_tci {
        f = crate::stream::insert_bytes(&f, 12, &[0x81, 0x00, (tci >> 8) as u8, tci as u8]);
    }
    crate::mac::fcs_append(&f)
}

/// The whole TX path with segmentation and encapsulation: the wire frames (FCS included) of
/// one request. Segments ([`crate::tso::tso`] when `mss` is set: it writes every checksum of a
/// segment, and the request's checksum flags are not applied), else the frame with the
/// checksums it asks for ([`checksum_offload`]); then per frame the encapsulation with outer IPv4 ID
/// `*ip_id` (which then counts up by one per encapsulated frame, as the NIC's per-context
/// counter does), the VLAN tag, padding and FCS.
pub fn tx_frames(
    frame: &[u8],
    req: &TxRequest,
    window: usize,
    ip_id: &mut u16,
) -> crate::error::Result<Vec<Vec<u8>>> {
    let segments = match (req.mss, req.aborted) {
        // An aborted send: its bytes and the abort beat's one byte are segmented; the last
        // segment, the one that byte ends, is dropped (counted), so every whole segment of
        // the bytes that left goes out, none flagged the send's last.
        (Some(mss), true) => {
            let mut f = frame.to_vec();
            f.push(0);
            let mut s = crate::tso::tso(&f, mss, &crate::tunnel::TunnelConfig::default())?;
            s.pop();
            s
        }
        (Some(mss), false) => crate::tso::tso(frame, mss, &crate::tunnel::TunnelConfig::default())?,
        (None, true) => Vec::new(),
        (None, false) => vec![frame.to_vec()],
    };
    segments
        .iter()
        .map(|s| {
            // A segment's checksums are the segmentation's; the requests apply to a frame sent
            // whole.
            let mut f = if req.mss.is_some() {
                s.clone()
            } else {
                checksum_offload(s, req.csum_l3, req.csum_l4, window)
            };
            if let Some(ctx) = &req.encap {
                let ctx = crate::encap::EncapContext { vlan: None, ..*ctx };
                f = crate::encap::encap(&f, &ctx, *ip_id)?;
                *ip_id = ip_id.wrapping_add(1);
            }
            if let Some(tci) = req.vlan_tci {
                f = crate::stream::insert_bytes(&f, 12, &[0x81, 0x00, (tci >> 8) as u8, tci as u8]);
            }
            Ok(crate::mac::fcs_append(&f))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::hex;

    /// An aborted LSO send: the whole segments of the bytes that left, none the send's last
    /// (no FIN or PSH); the partial one is dropped.
    #[test]
    fn an_aborted_send_keeps_its_whole_segments_only() {
        use crate::tcp::Flags;
        use crate::vectors::overlay::{pattern, tcp_frame, Ip};
        let ip = Ip {
            v6: false,
            ident: 7,
        };
        let flags = Flags(Flags::ACK.0 | Flags::PSH.0 | Flags::FIN.0);
        let f = tcp_frame(ip, false, 1000, flags, &pattern(5000));
        let hdr = f.len() - 5000;
        let req = |aborted| TxRequest {
            mss: Some(1000),
            aborted,
            ..TxRequest::default()
        };
        let whole = tx_frames(&f, &req(false), 128, &mut 0).unwrap();
        // 2500 payload bytes left: two whole segments, as the send's segments 0 and 1.
        let cut = tx_frames(&f[..hdr + 2500], &req(true), 128, &mut 0).unwrap();
        assert_eq!(cut, whole[..2]);
        // Exactly three whole segments left: all three, none flagged the last.
        let cut = tx_frames(&f[..hdr + 3000], &req(true), 128, &mut 0).unwrap();
        assert_eq!(cut, whole[..3]);
        // Nothing but headers: nothing.
        assert!(tx_frames(&f[..hdr], &req(true), 128, &mut 0)
            .unwrap()
            .is_empty());
    }

    /// Without segmentation or encapsulation `tx_frames` is `tx_frame`; with both it is
    /// `tso::encap_tso` (IDs from the counter, which moves on per segment), tagged and framed.
    #[test]
    fn tx_frames_segments_then_encapsulates() {
        use crate::encap::EncapKind;
        use crate::tcp::Flags;
        use crate::vectors::overlay::{ctx, pattern, tcp_frame, Ip};
        let f = tcp_frame(
            Ip {
                v6: false,
                ident: 7,
            },
            false,
            1000,
            Flags::ACK | Flags::PSH,
            &pattern(5000),
        );
        let plain = TxRequest {
            csum_l4: true,
            ..TxRequest::default()
        };
        let mut id = 0;
        assert_eq!(
            tx_frames(&f, &plain, 128, &mut id).unwrap(),
            [tx_frame(&f, &plain, 128)]
        );
        assert_eq!(id, 0);
        let c = ctx(false, false, EncapKind::vxlan(42));
        let req = TxRequest {
            csum_l3: true,
            csum_l4: true,
            vlan_tci: Some(5),
            mss: Some(1448),
            encap: Some(c),
            aborted: false,
        };
        let mut id = 0xFFFE;
        let got = tx_frames(&f, &req, 128, &mut id).unwrap();
        let want: Vec<Vec<u8>> = crate::tso::encap_tso(&f, 1448, &c, 0xFFFE)
            .unwrap()
            .iter()
            .map(|s| crate::mac::fcs_append(&crate::stream::insert_bytes(s, 12, &[0x81, 0, 0, 5])))
            .collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got, want);
        assert_eq!(id, 2);
    }

    #[test]
    fn reproduces_the_ipv4_tcp_syn_vector() {
        // wire-formats.md §3.1/3.2: IPv4 header checksum 0xF6CB, TCP SYN checksum 0xFB55.
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        f.extend(hex(
            "45 00 00 28 00 01 00 00 40 06 00 00 c0 00 02 01 c0 00 02 02",
        ));
        f.extend(hex(
            "30 39 00 50 00 00 00 00 00 00 00 00 50 02 ff ff 00 00 00 00",
        ));
        let o = Offsets {
            ipv4: Some(true),
            l4: Some(L4::Tcp),
            l3_off: 14,
            l4_off: 34,
            end: 54,
        };
        let out = insert_checksums(&f, &o, true, true);
        assert_eq!(&out[24..26], &[0xf6, 0xcb]);
        assert_eq!(&out[50..52], &[0xfb, 0x55]);
        let only_l3 = insert_checksums(&f, &o, true, false);
        assert_eq!(&only_l3[50..52], &[0, 0]);
    }
}
