//! Frame generators shared by the path tests (`eth_rx`, `eth_tx`, `nic_core`): frames as they
//! come off the wire, and host frames with their offload requests.

use nicgen_model::crc32::append_fcs;
use nicgen_model::tx::TxRequest;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// A mix of frames as they come off the wire (FCS appended, sometimes corrupted).
pub fn wire_frames(seed: u64, n: usize, mtu: usize) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        let mut f: Vec<u8> = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        for _ in 0..rng.gen_range(0..=2) {
            f.extend([
                if rng.gen_bool(0.7) { 0x81 } else { 0x88 },
                if rng.gen_bool(0.7) { 0x00 } else { 0xa8 },
                rng.gen(),
                rng.gen(),
            ]);
        }
        let kind = rng.gen_range(0..10);
        let body_len = rng.gen_range(20..200);
        match kind {
            0..=5 => {
                let v6 = rng.gen_bool(0.4);
                f.extend(if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
                let proto = if rng.gen_bool(0.5) { 6 } else { 17 };
                let l4: Vec<u8> = (0..body_len).map(|_| rng.gen()).collect();
                if v6 {
                    let mut h = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
                    h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
                    h.extend((0..32).map(|_| rng.gen::<u8>()));
                    f.extend(h);
                } else {
                    let mut h = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0];
                    h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
                    h.extend((0..8).map(|_| rng.gen::<u8>()));
                    let ck = !nicgen_model::checksum::sum(&h);
                    h[10..12].copy_from_slice(&ck.to_be_bytes());
                    f.extend(h);
                }
                let l4_start = f.len();
                f.extend(l4);
                if proto == 6 {
                    f[l4_start + 12] = 0x50;
                } else {
                    let len = (f.len() - l4_start) as u16;
                    f[l4_start + 4..l4_start + 6].copy_from_slice(&len.to_be_bytes());
                }
                if rng.gen_bool(0.5) {
                    // Fix the L4 checksum with the model's TX insertion (IPv4: header too).
                    let o = nicgen_model::tx::Offsets {
                        ipv4: Some(!v6),
                        l4: Some(if proto == 6 {
                            nicgen_model::tx::L4::Tcp
                        } else {
                            nicgen_model::tx::L4::Udp
                        }),
                        l3_off: l4_start - if v6 { 40 } else { 20 },
                        l4_off: l4_start,
                        end: f.len(),
                    };
                    f = nicgen_model::tx::insert_checksums(&f, &o, !v6, true);
                }
            }
            6 => {
                f.extend([0x88, 0x08]); // MAC control (PAUSE)
                f.extend((0..46).map(|_| rng.gen::<u8>()));
            }
            7 => {
                f.extend([0x08, 0x06]);
                f.extend((0..body_len).map(|_| rng.gen::<u8>()));
            }
            8 => {
                // Truncated IP.
                f.extend([0x08, 0x00, 0x45]);
                f.extend((0..rng.gen_range(0..30)).map(|_| rng.gen::<u8>()));
            }
            _ => {
                // Runt or oversize.
                let len = if rng.gen_bool(0.5) {
                    rng.gen_range(1..50)
                } else {
                    mtu + 23 + rng.gen_range(0..20)
                };
                f = (0..len).map(|_| rng.gen()).collect();
            }
        }
        if f.len() < 60 && rng.gen_bool(0.7) {
            f.resize(60, 0);
        }
        append_fcs(&mut f);
        if rng.gen_ratio(1, 8) {
            let at = rng.gen_range(0..f.len());
            f[at] ^= 0x10;
        }
        out.push(f);
    }
    out
}

/// The TPIDs of the size-limit frames (outermost first) and the tags the size check must count:
/// none, a C-tag, an S-tag, S+C, C+C, C+S, three tags (the third is payload) and 0x9100 (not a
/// TPID here).
pub const TAGGINGS: [(&[u16], usize); 8] = [
    (&[], 0),
    (&[0x8100], 1),
    (&[0x88A8], 1),
    (&[0x88A8, 0x8100], 2),
    (&[0x8100, 0x8100], 2),
    (&[0x8100, 0x88A8], 2),
    (&[0x88A8, 0x8100, 0x8100], 2),
    (&[0x9100], 0),
];

/// Frames as they come off the wire (good FCS) at the size limit and one byte over, for each of
/// [`TAGGINGS`]: IPv4/UDP frames of 14 + 4 × tags + `mtu` and one more bytes without FCS, the
/// tags in front of the EtherType; then the L2 payload 8 bytes over the MTU, untagged (at MTU
/// 1500: 1,508 bytes of payload, 1,522 bytes). Each with whether it is oversize.
pub fn size_limit_frames(mtu: usize) -> Vec<(Vec<u8>, bool)> {
    let mut v = Vec::new();
    for (seq, (tpids, tags)) in TAGGINGS.iter().enumerate() {
        let limit = 14 + 4 * tags + mtu;
        for (len, over) in [(limit, false), (limit + 1, true)] {
            let mut f = nicgen::traffic::udp_frame(len - 4 * tpids.len(), seq);
            for (i, t) in tpids.iter().enumerate() {
                let tci = (0x0100 + seq as u16 * 16 + i as u16).to_be_bytes();
                let at = 12 + 4 * i;
                f.splice(
                    at..at,
                    [t.to_be_bytes()[0], t.to_be_bytes()[1], tci[0], tci[1]],
                );
            }
            assert_eq!(f.len(), len);
            append_fcs(&mut f);
            v.push((f, over));
        }
    }
    let mut f = nicgen::traffic::udp_frame(14 + mtu + 8, 99);
    append_fcs(&mut f);
    v.push((f, true));
    v
}

/// Host frames: IPv4/IPv6 TCP/UDP with garbage in the checksum fields, VLAN-tagged ones, non-IP,
/// short and truncated ones.
pub fn host_frames(seed: u64, n: usize) -> Vec<(Vec<u8>, TxRequest)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut f: Vec<u8> = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
            let kind = rng.gen_range(0..8);
            let body: usize = if rng.gen_bool(0.2) {
                rng.gen_range(300..2000)
            } else {
                rng.gen_range(8..300)
            };
            match kind {
                0..=5 => {
                    let v6 = rng.gen_bool(0.4);
                    let proto: u8 = if rng.gen_bool(0.5) { 6 } else { 17 };
                    f.extend(if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
                    let l4len = body.max(20);
                    if v6 {
                        let mut h = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
                        h[4..6].copy_from_slice(&(l4len as u16).to_be_bytes());
                        h.extend((0..32).map(|_| rng.gen::<u8>()));
                        f.extend(h);
                    } else {
                        let mut h = vec![
                            0x45,
                            0,
                            0,
                            0,
                            0,
                            0,
                            0x40,
                            0,
                            64,
                            proto,
                            rng.gen(),
                            rng.gen(),
                        ];
                        h[2..4].copy_from_slice(&((20 + l4len) as u16).to_be_bytes());
                        h.extend((0..8).map(|_| rng.gen::<u8>()));
                        f.extend(h);
                    }
                    let l4 = f.len();
                    f.extend((0..l4len).map(|_| rng.gen::<u8>()));
                    if proto == 6 {
                        f[l4 + 12] = 0x50;
                    } else {
                        f[l4 + 4..l4 + 6].copy_from_slice(&(l4len as u16).to_be_bytes());
                    }
                }
                6 => {
                    f.extend([0x08, 0x06]);
                    f.extend((0..body).map(|_| rng.gen::<u8>()));
                }
                _ => f.truncate(rng.gen_range(1..12)),
            }
            let req = TxRequest {
                csum_l3: rng.gen(),
                csum_l4: rng.gen(),
                vlan_tci: rng.gen_bool(0.3).then(|| rng.gen()),
                ..TxRequest::default()
            };
            (f, req)
        })
        .collect()
}
