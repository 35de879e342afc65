//! Random frames with known header offsets, for the checksum-unit tests (independent of the
//! parser: the offsets come from how each frame was built).

use nicgen_edsl::Shape;
use nicgen_hdl::eth::rx_csum::RxCsumReq;
use nicgen_hdl::eth::tx_csum::TxCsumReq;
use nicgen_model::checksum::{pseudo_header_v4, pseudo_header_v6, sum};
use nicgen_model::ip::IpProtocol;
use nicgen_model::tx::{Offsets, L4};
use rand::{rngs::StdRng, Rng};

/// A built frame: its bytes, where its headers are, what the RX checksum unit must report, and
/// what its request records carry.
pub struct Built {
    pub frame: Vec<u8>,
    pub offsets: Offsets,
    /// (IPv4 header sums to 0xFFFF, L4 verifies or UDP/IPv4 without checksum, datagram sum).
    pub want: (bool, bool, u16),
    req: RxCsumReq<u128>,
}

impl Built {
    /// The `rx_csum` request for this frame.
    pub fn rx_req(&self) -> Vec<u8> {
        RxCsumReq::shape().encode(&self.req)
    }
    /// The `tx_csum` request for this frame with the given offload flags.
    pub fn tx_req(&self, do_l3: bool, do_l4: bool) -> Vec<u8> {
        let r = &self.req;
        TxCsumReq::shape().encode(&TxCsumReq {
            l3: r.l3,
            l4: r.l4,
            l3_off: r.l3_off,
            l4_off: r.l4_off,
            end: r.end,
            l4_len: r.l4_len,
            proto: r.proto,
            ip_sum: r.ip_sum,
            do_l3: do_l3 as u128,
            do_l4: do_l4 as u128,
        })
    }
}

pub fn put16(v: &mut [u8], at: usize, x: u16) {
    v[at..at + 2].copy_from_slice(&x.to_be_bytes());
}

/// One random frame (VLAN tags, IPv4 with options or IPv6 with extension headers, TCP or UDP,
/// good, bad or zero checksums, sometimes trailing bytes after the datagram).
pub fn build(rng: &mut StdRng) -> Built {
    let mut f: Vec<u8> = (0..12).map(|_| rng.gen()).collect();
    for _ in 0..rng.gen_range(0..=2) {
        f.extend([0x81, 0x00, rng.gen(), rng.gen()]);
    }
    let v6 = rng.gen_bool(0.4);
    let tcp = rng.gen_bool(0.5);
    let proto: u8 = if tcp { 6 } else { 17 };
    f.extend(if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
    let l3 = f.len();
    let payload: Vec<u8> = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
    let l4_hdr = if tcp { 20 + 4 * rng.gen_range(0..3) } else { 8 };
    let l4_len = l4_hdr + payload.len();
    let (src, dst): (Vec<u8>, Vec<u8>);
    if v6 {
        src = (0..16).map(|_| rng.gen()).collect();
        dst = (0..16).map(|_| rng.gen()).collect();
        let ext = rng.gen_bool(0.5);
        let mut h = vec![0x60, 0, 0, 0, 0, 0, if ext { 0 } else { proto }, 64];
        let ext_len = if ext { 8 * rng.gen_range(1..4) } else { 0 };
        put16(&mut h, 4, (ext_len + l4_len) as u16);
        h.extend(&src);
        h.extend(&dst);
        f.extend(h);
        if ext {
            let mut e = vec![0u8; ext_len];
            e[0] = proto;
            e[1] = (ext_len / 8 - 1) as u8;
            f.extend(e);
        }
    } else {
        src = (0..4).map(|_| rng.gen()).collect();
        dst = (0..4).map(|_| rng.gen()).collect();
        let opts = 4 * rng.gen_range(0..4);
        let mut h = vec![
            0x45 + (opts / 4) as u8,
            0,
            0,
            0,
            rng.gen(),
            rng.gen(),
            0x40,
            0,
            64,
            proto,
            0,
            0,
        ];
        put16(&mut h, 2, (20 + opts + l4_len) as u16);
        h.extend(&src);
        h.extend(&dst);
        h.extend((0..opts).map(|_| rng.gen::<u8>()));
        let ck = !sum(&h);
        put16(&mut h, 10, ck);
        if rng.gen_bool(0.2) {
            // A bad header checksum: flip a bit in the ID, TTL or checksum bytes (fields that
            // the request records do not carry, so they stay true to the frame).
            let at = [4, 5, 8, 10, 11][rng.gen_range(0..5)];
            h[at] ^= 1 << rng.gen_range(0..8);
        }
        f.extend(h);
    }
    let l4 = f.len();
    let mut seg = vec![0u8; l4_hdr];
    for b in seg.iter_mut() {
        *b = rng.gen();
    }
    if tcp {
        seg[12] = ((l4_hdr / 4) as u8) << 4;
    } else {
        put16(&mut seg, 4, l4_len as u16);
    }
    let ck_at = if tcp { 16 } else { 6 };
    put16(&mut seg, ck_at, 0);
    seg.extend(&payload);
    let ps = if v6 {
        pseudo_header_v6(
            <[u8; 16]>::try_from(&src[..]).unwrap().into(),
            <[u8; 16]>::try_from(&dst[..]).unwrap().into(),
            IpProtocol::from(proto),
            l4_len as u32,
        )
    } else {
        pseudo_header_v4(
            <[u8; 4]>::try_from(&src[..]).unwrap().into(),
            <[u8; 4]>::try_from(&dst[..]).unwrap().into(),
            IpProtocol::from(proto),
            l4_len as u16,
        )
    };
    let mut ck = !nicgen_model::checksum::combine(&[ps, sum(&seg)]);
    if !tcp && ck == 0 {
        ck = 0xFFFF;
    }
    match rng.gen_range(0..6) {
        0 => ck ^= 0x0100,          // bad checksum
        1 if !tcp && !v6 => ck = 0, // UDP over IPv4 without checksum
        _ => {}
    }
    put16(&mut seg, ck_at, ck);
    f.extend(&seg);
    let ip_end = f.len();
    // Ethernet padding (or trailing bytes) beyond the IP datagram.
    if rng.gen_bool(0.3) {
        f.extend((0..rng.gen_range(1..20)).map(|_| rng.gen::<u8>()));
    }
    let l3_ok = sum(&f[l3..l4]) == 0xFFFF;
    let l4_sum = nicgen_model::checksum::combine(&[ps, sum(&f[l4..ip_end])]);
    let udp_zero = !tcp && !v6 && f[l4 + 6] == 0 && f[l4 + 7] == 0;
    let want = (l3_ok, l4_sum == 0xFFFF || udp_zero, sum(&f[l3..ip_end]));
    let be = |b: &[u8]| b.iter().fold(0u128, |a, x| (a << 8) | *x as u128);
    let req = RxCsumReq {
        l3: if v6 { 2 } else { 1 },
        l4: if tcp { 1 } else { 2 },
        l3_off: l3 as u128,
        l4_off: l4 as u128,
        end: ip_end as u128,
        l4_len: l4_len as u128,
        proto: proto as u128,
        ip_sum: nicgen_model::checksum::address_sum(be(&src), be(&dst)) as u128,
    };
    let offsets = Offsets {
        ipv4: Some(!v6),
        l4: Some(if tcp { L4::Tcp } else { L4::Udp }),
        l3_off: l3,
        l4_off: l4,
        end: ip_end,
    };
    Built {
        frame: f,
        offsets,
        want,
        req,
    }
}
