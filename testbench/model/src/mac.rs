//! MAC framing: what the receive side checks and strips, what the transmit side pads and appends.
//!
//! Frames here are whole frames from the destination address on, with or without their 4-byte
//! FCS (sent least significant byte first, see [`crate::crc32`]); nothing about beats or clocks.
//!
//! Receive ([`fcs_check`]): the frame as it came off the wire, FCS included, gives
//!
//! | Verdict | When |
//! |---|---|
//! | `fcs_bad` | the last four bytes are not the FCS of the bytes before them (always for < 4 bytes) |
//! | `runt` | the frame, FCS included, is shorter than [`MIN_FRAME`] (64) bytes |
//! | `oversize` | the frame without its FCS is longer than [`max_frame`]`(mtu, tags)` = 14 + 4 × tags + MTU |
//! | `mac_control` | EtherType 0x8808 at bytes 12-13, or at bytes 16-17 behind one 0x8100/0x88A8 tag, inside the frame without its FCS |
//!
//! The MTU is the largest L2 payload. `tags` counts the frame's own VLAN tags, at most two: a
//! TPID (0x8100 or 0x88A8) at bytes 12-13 is one tag, and a second TPID behind it at bytes
//! 16-17 is another ([`vlan_tags`]); a third tag is payload. An untagged frame may carry MTU
//! bytes after its EtherType, a tagged one the same MTU after its last tag.
//!
//! and the frame without its FCS. A frame of four bytes or fewer has no bytes left once the FCS
//! is removed; since a stream cannot carry an empty frame, it comes out as one zero byte (always
//! a runt, so always marked bad): every frame in gives exactly one frame out.
//!
//! Transmit ([`fcs_append`]): pad with zero bytes to [`MIN_FRAME_NO_FCS`] (60) bytes, then append
//! the FCS of the padded frame.

use crate::crc32::{append_fcs, check_fcs};

/// Minimum frame length on the wire, FCS included.
pub const MIN_FRAME: usize = 64;
/// Minimum frame length without the FCS (what the transmit side pads to).
pub const MIN_FRAME_NO_FCS: usize = MIN_FRAME - FCS_LEN;
/// Length of the frame check sequence.
pub const FCS_LEN: usize = 4;
/// EtherType of MAC control frames (PAUSE, PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// TPIDs that announce one VLAN tag before the EtherType (802.1Q C-tag, 802.1ad S-tag).
pub const VLAN_TPIDS: [u16; 2] = [0x8100, 0x88A8];

/// What the receive side makes of one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxVerdict {
    /// The frame without its FCS (one zero byte when nothing is left, see the module docs).
    pub frame: Vec<u8>,
    /// The FCS does not match (or the frame is too short to have one).
    pub fcs_bad: bool,
    /// Shorter than 64 bytes, FCS included.
    pub runt: bool,
    /// Longer than [`max_frame`]`(mtu, tags)` without the FCS.
    pub oversize: bool,
    /// A MAC control frame (PAUSE/PFC): for the MAC, not the host.
    pub mac_control: bool,
}

impl RxVerdict {
    /// The frame must not reach the host: any of the flags is set.
    pub fn bad(&self) -> bool {
        self.fcs_bad || self.runt || self.oversize || self.mac_control
    }
}

/// Whether `frame` (without FCS) is a MAC control frame: EtherType 0x8808 at bytes 12-13, or
/// behind one VLAN tag at bytes 16-17.
pub fn is_mac_control(frame: &[u8]) -> bool {
    let be16 = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    match be16(12) {
        Some(ETHERTYPE_MAC_CONTROL) => true,
        Some(t) if VLAN_TPIDS.contains(&t) => be16(16) == Some(ETHERTYPE_MAC_CONTROL),
        _ => false,
    }
}

/// The frame's own VLAN tags (0, 1 or 2): a TPID (0x8100 or 0x88A8) at bytes 12-13, then a
/// second one at bytes 16-17; `frame` is without its FCS, and a TPID counts only inside it.
pub fn vlan_tags(frame: &[u8]) -> usize {
    let tpid_at = |at: usize| {
        frame
            .get(at..at + 2)
            .is_some_and(|b| VLAN_TPIDS.contains(&u16::from_be_bytes([b[0], b[1]])))
    };
    match (tpid_at(12), tpid_at(16)) {
        (false, _) => 0,
        (true, false) => 1,
        (true, true) => 2,
    }
}

/// The largest frame, without FCS, that is not `oversize`: the Ethernet header (14 bytes), the
/// frame's own VLAN tags (4 bytes each) and `mtu` bytes of L2 payload.
pub fn max_frame(mtu: usize, tags: usize) -> usize {
    14 + 4 * tags + mtu
}

/// The receive-side check of one frame as it came off the wire (FCS included) at `mtu` (the
/// largest L2 payload): `oversize` when the frame without its FCS is longer than
/// [`max_frame`]`(mtu, `[`vlan_tags`]`)`.
pub fn fcs_check(frame_with_fcs: &[u8], mtu: usize) -> RxVerdict {
    let len = frame_with_fcs.len();
    let frame = if len > FCS_LEN {
        frame_with_fcs[..len - FCS_LEN].to_vec()
    } else {
        vec![0]
    };
    let body = &frame_with_fcs[..len.saturating_sub(FCS_LEN)];
    RxVerdict {
        fcs_bad: !check_fcs(frame_with_fcs),
        runt: len < MIN_FRAME,
        oversize: body.len() > max_frame(mtu, vlan_tags(body)),
        mac_control: is_mac_control(body),
        frame,
    }
}

/// `frame` padded with zero bytes to at least 60 bytes.
pub fn pad(frame: &[u8]) -> Vec<u8> {
    let mut v = frame.to_vec();
    if v.len() < MIN_FRAME_NO_FCS {
        v.resize(MIN_FRAME_NO_FCS, 0);
    }
    v
}

/// The transmit side: pad `frame` (without FCS) to 60 bytes, then append its FCS.
pub fn fcs_append(frame: &[u8]) -> Vec<u8> {
    let mut v = pad(frame);
    append_fcs(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crc32::crc32;

    /// The usual Ethernet MTU: 1514 bytes without FCS untagged, 1518 with one tag, 1522 with two.
    const MTU: usize = 1500;

    fn frame(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(37) ^ seed)
            .collect()
    }

    #[test]
    fn append_pads_to_60_then_adds_the_fcs() {
        let f = fcs_append(&[1, 2, 3]);
        assert_eq!(f.len(), 64);
        assert_eq!(&f[..3], &[1, 2, 3]);
        assert!(f[3..60].iter().all(|&b| b == 0));
        assert_eq!(f[60..], crc32(&f[..60]).to_le_bytes());
        for len in [59, 60, 61, 1514] {
            let f = fcs_append(&frame(len, 9));
            assert_eq!(f.len(), len.max(60) + 4, "len {len}");
            assert!(check_fcs(&f));
        }
    }

    #[test]
    fn a_good_frame_passes_and_loses_its_fcs() {
        let body = frame(100, 1);
        let v = fcs_check(&fcs_append(&body), MTU);
        assert_eq!(v.frame, body);
        assert!(!v.bad());
        // Round trip of a short frame keeps the padding.
        let v = fcs_check(&fcs_append(&[7; 10]), MTU);
        assert_eq!(v.frame.len(), 60);
        assert!(!v.bad());
    }

    #[test]
    fn each_flag_on_its_own() {
        let mut f = fcs_append(&frame(100, 2));
        f[50] ^= 0x01;
        let v = fcs_check(&f, MTU);
        assert!(v.fcs_bad && !v.runt && !v.oversize && !v.mac_control && v.bad());

        let mut f = frame(40, 3);
        append_fcs(&mut f); // unpadded: 44 bytes with FCS
        let v = fcs_check(&f, MTU);
        assert!(v.runt && !v.fcs_bad && v.bad());
        assert_eq!(v.frame.len(), 40);

        let f = fcs_append(&frame(1515, 4));
        let v = fcs_check(&f, MTU);
        assert!(v.oversize && !v.fcs_bad && !v.runt);
        assert!(!fcs_check(&fcs_append(&frame(1514, 4)), MTU).oversize);

        let mut pause = frame(60, 5);
        pause[12..14].copy_from_slice(&[0x88, 0x08]);
        let v = fcs_check(&fcs_append(&pause), MTU);
        assert!(v.mac_control && !v.fcs_bad && !v.runt && v.bad());
    }

    #[test]
    fn the_size_limit_counts_the_frames_own_tags() {
        // (bytes 12-13, bytes 16-17) and the tags they make.
        let cases: [([u8; 2], [u8; 2], usize); 7] = [
            ([0x08, 0x00], [0x81, 0x00], 0),
            ([0x81, 0x00], [0x08, 0x00], 1),
            ([0x88, 0xA8], [0x08, 0x00], 1),
            ([0x88, 0xA8], [0x81, 0x00], 2),
            ([0x81, 0x00], [0x88, 0xA8], 2),
            ([0x81, 0x00], [0x81, 0x00], 2),
            ([0x91, 0x00], [0x81, 0x00], 0),
        ];
        for (outer, inner, tags) in cases {
            let limit = 14 + 4 * tags + MTU;
            assert_eq!(max_frame(MTU, tags), limit);
            for (len, over) in [(limit, false), (limit + 1, true)] {
                let mut f = frame(len, 7);
                f[12..14].copy_from_slice(&outer);
                f[16..18].copy_from_slice(&inner);
                assert_eq!(vlan_tags(&f), tags, "{outer:02x?} {inner:02x?}");
                let v = fcs_check(&fcs_append(&f), MTU);
                assert_eq!(v.oversize, over, "{tags} tags, {len} bytes");
                assert!(!v.fcs_bad && !v.runt && v.bad() == over);
            }
        }
        // The case: 1,508 bytes of L2 payload untagged at MTU 1500 (1,522 bytes).
        let mut f = frame(14 + 1508, 8);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        assert!(fcs_check(&fcs_append(&f), MTU).oversize);
        // A TPID counts only inside the frame without its FCS.
        let mut two = [0u8; 18];
        two[12..14].copy_from_slice(&[0x81, 0x00]);
        two[16..18].copy_from_slice(&[0x88, 0xA8]);
        assert_eq!(vlan_tags(&two), 2);
        assert_eq!(vlan_tags(&two[..17]), 1);
        assert_eq!(vlan_tags(&two[..13]), 0);
    }

    #[test]
    fn mac_control_behind_one_tag_only() {
        let mut f = frame(60, 6);
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f[16..18].copy_from_slice(&[0x88, 0x08]);
        assert!(is_mac_control(&f));
        f[12..14].copy_from_slice(&[0x88, 0xA8]);
        assert!(is_mac_control(&f));
        f[12..14].copy_from_slice(&[0x91, 0x00]);
        assert!(!is_mac_control(&f));
        // Not inside the frame: the EtherType would be FCS bytes.
        assert!(!is_mac_control(&[0x88; 13]));
        let mut g = vec![0u8; 14];
        g[12..14].copy_from_slice(&[0x88, 0x08]);
        assert!(is_mac_control(&g));
        let mut with_fcs = g[..12].to_vec();
        with_fcs.extend_from_slice(&[0x88, 0x08, 0, 0]); // 0x8808 sits in the last 4 bytes
        assert!(!fcs_check(&with_fcs, MTU).mac_control);
    }

    #[test]
    fn frames_of_four_bytes_or_fewer_become_one_zero_byte() {
        for len in 1..=4 {
            let v = fcs_check(&vec![0xAB; len], MTU);
            assert_eq!(v.frame, vec![0], "len {len}");
            assert!(v.runt && v.bad());
            assert_eq!(v.fcs_bad, len < 4 || crc32(&[]).to_le_bytes() != [0xAB; 4]);
        }
        // The empty frame's FCS is 00 00 00 00: four zero bytes carry a correct FCS.
        assert!(!fcs_check(&[0; 4], MTU).fcs_bad);
        assert!(fcs_check(&[0; 3], MTU).fcs_bad);
        let v = fcs_check(&[1, 2, 3, 4, 5], MTU);
        assert_eq!(v.frame, vec![1]);
    }
}
