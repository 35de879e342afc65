//! Traffic shared by the benchmarks and the throughput tests.

/// The frame sizes (bytes without FCS) of `results/PIPELINE.md`: the shortest frames, the
/// sizes around one and two 64-byte beats, and up to a jumbo frame.
pub const SIZES: [usize; 11] = [60, 61, 64, 65, 128, 256, 511, 512, 1024, 1514, 9000];

/// An IPv4/UDP frame of `len` bytes (34 to 65535, without FCS) with correct IPv4 and UDP
/// lengths and IPv4 header checksum; the payload bytes count up from `seq`.
pub fn udp_frame(len: usize, seq: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = len - 14;
    let mut ip = vec![
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ];
    let ck = !nicgen_model::checksum::sum(&ip);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    f.extend(ip);
    let udp_len = ip_len - 20;
    f.extend([
        0x30,
        0x39,
        0x00,
        0x35,
        (udp_len >> 8) as u8,
        udp_len as u8,
        0,
        0,
    ]);
    f.extend((0..len - f.len()).map(|k| (k + seq) as u8));
    f
}

/// The outer frame sizes of the tunnel rows of `results/PIPELINE.md`: from the smallest VXLAN
/// frame around an IPv4/UDP inner frame up to a jumbo frame.
pub const TUNNEL_SIZES: [usize; 7] = [92, 128, 256, 512, 1024, 1514, 9000];

/// A VXLAN frame of `len` bytes (92 to 65535, without FCS): [`udp_frame`] of `len - 50` bytes
/// in VNI 42 behind the model's worked-example outer headers (`vectors::overlay::ctx`: IPv4,
/// 172.16.0.1 → 172.16.0.2).
pub fn vxlan_frame(len: usize, seq: usize) -> Vec<u8> {
    use nicgen_model::encap::{encap, EncapKind};
    let c = nicgen_model::vectors::overlay::ctx(false, false, EncapKind::vxlan(42));
    encap(&udp_frame(len - c.outer_len(), seq), &c, seq as u16).expect("a VXLAN frame fits")
}
