//! Frame-level models of the stream primitives.
//!
//! [`insert_bytes`] and [`delete_bytes`] model `stream_insert` and `stream_delete` (VLAN insert
//! and strip are `off = 12`, `n = 4`); [`trim_bytes`] models `stream_trim` (a tunnelled frame
//! cut down to its inner frame).
//!
//! The forward register, skid buffer and plain FIFO are the identity on frames (same frames,
//! same order, same bytes). The frame FIFO drops frames marked bad and frames larger than its
//! capacity; [`fifo_frames`] says which, in bytes rather than beats: a FIFO of `depth` beats of
//! `w` bytes holds `depth * w` bytes, and a frame longer than that can never be stored whole.

/// One frame offered to a stream block: its bytes and its `bad` mark (`tuser[0]` on `tlast`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedFrame {
    /// The frame.
    pub bytes: Vec<u8>,
    /// Marked bad on its last beat.
    pub bad: bool,
}

/// What a frame FIFO does with a sequence of frames.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FifoOutcome {
    /// Frames that come out, in order.
    pub delivered: Vec<Vec<u8>>,
    /// Frames dropped because they were marked bad.
    pub dropped_bad: usize,
    /// Frames dropped because they exceed the capacity (counted as oversize even when also bad).
    pub dropped_oversize: usize,
}

/// The frame FIFO: drop oversize frames (longer than `capacity_bytes`), then bad ones; deliver
/// the rest unchanged and in order. `delivered + dropped_bad + dropped_oversize = frames`.
pub fn fifo_frames(frames: &[MarkedFrame], capacity_bytes: usize) -> FifoOutcome {
    let mut out = FifoOutcome::default();
    for f in frames {
        if f.bytes.len() > capacity_bytes {
            out.dropped_oversize += 1;
        } else if f.bad {
            out.dropped_bad += 1;
        } else {
            out.delivered.push(f.bytes.clone());
        }
    }
    out
}

/// `stream_insert`: `bytes` inserted at offset `off` (`frame[..off] ++ bytes ++ frame[off..]`).
/// A frame shorter than `off` has no such offset and is returned unchanged; a frame of exactly
/// `off` bytes gets `bytes` appended.
pub fn insert_bytes(frame: &[u8], off: usize, bytes: &[u8]) -> Vec<u8> {
    if frame.len() < off {
        return frame.to_vec();
    }
    [&frame[..off], bytes, &frame[off..]].concat()
}

/// `stream_delete`: the `n` bytes at offset `off` removed (`frame[..off] ++ frame[off + n..]`).
/// A frame of at most `off` bytes is returned unchanged; a frame that ends inside the deleted
/// range loses what exists of it (it keeps its first `off` bytes).
pub fn delete_bytes(frame: &[u8], off: usize, n: usize) -> Vec<u8> {
    if frame.len() <= off {
        return frame.to_vec();
    }
    let end = off.saturating_add(n).min(frame.len());
    [&frame[..off], &frame[end..]].concat()
}

/// `stream_trim`: `frame[head .. min(head + len, frame.len())]`, or `None` when the frame is
/// discarded: `drop`, `len = 0`, or a frame of at most `head` bytes (nothing would remain, and a
/// stream frame cannot be empty).
pub fn trim_bytes(frame: &[u8], head: usize, len: usize, drop: bool) -> Option<Vec<u8>> {
    if drop || len == 0 || frame.len() <= head {
        return None;
    }
    let end = head.saturating_add(len).min(frame.len());
    Some(frame[head..end].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_and_delete_bytes_at_the_edges() {
        let f: Vec<u8> = (0..16).collect();
        let tag = [0x81, 0x00, 0x0f, 0xff];
        let ins = insert_bytes(&f, 12, &tag);
        assert_eq!(&ins[..12], &f[..12]);
        assert_eq!(&ins[12..16], &tag);
        assert_eq!(&ins[16..], &f[12..]);
        assert_eq!(delete_bytes(&ins, 12, 4), f, "delete undoes insert");
        assert_eq!(
            insert_bytes(&f[..11], 12, &tag),
            f[..11].to_vec(),
            "shorter than off"
        );
        assert_eq!(
            insert_bytes(&f[..12], 12, &tag),
            [&f[..12], &tag[..]].concat(),
            "appended"
        );
        assert_eq!(
            insert_bytes(&f, 0, &tag),
            [&tag[..], &f[..]].concat(),
            "prepend"
        );
        assert_eq!(
            delete_bytes(&f[..12], 12, 4),
            f[..12].to_vec(),
            "at most off: unchanged"
        );
        assert_eq!(
            delete_bytes(&f[..14], 12, 4),
            f[..12].to_vec(),
            "inside the range"
        );
        assert_eq!(delete_bytes(&f, 12, 4), f[..12].to_vec(), "ends at off + n");
        assert_eq!(delete_bytes(&f, 1, 100), f[..1].to_vec());
    }

    #[test]
    fn accounting_adds_up() {
        let f = |n: usize, bad: bool| MarkedFrame {
            bytes: vec![n as u8; n],
            bad,
        };
        let frames = vec![
            f(10, false),
            f(100, false),
            f(20, true),
            f(200, true),
            f(64, false),
        ];
        let o = fifo_frames(&frames, 64);
        assert_eq!(o.delivered, vec![vec![10u8; 10], vec![64u8; 64]]);
        assert_eq!((o.dropped_bad, o.dropped_oversize), (1, 2));
        assert_eq!(
            o.delivered.len() + o.dropped_bad + o.dropped_oversize,
            frames.len()
        );
    }

    #[test]
    fn trim_bytes_at_the_edges() {
        let f: Vec<u8> = (0..20).collect();
        assert_eq!(trim_bytes(&f, 0, 20, false), Some(f.clone()), "identity");
        assert_eq!(
            trim_bytes(&f, 0, 1000, false),
            Some(f.clone()),
            "len past the end"
        );
        assert_eq!(
            trim_bytes(&f, 5, 1000, false),
            Some(f[5..].to_vec()),
            "head only"
        );
        assert_eq!(
            trim_bytes(&f, 5, 3, false),
            Some(f[5..8].to_vec()),
            "head and len"
        );
        assert_eq!(
            trim_bytes(&f, 0, 1, false),
            Some(f[..1].to_vec()),
            "one byte"
        );
        assert_eq!(
            trim_bytes(&f, 19, 1, false),
            Some(f[19..].to_vec()),
            "the last byte"
        );
        assert_eq!(
            trim_bytes(&f, 19, 5, false),
            Some(f[19..].to_vec()),
            "cut by the frame"
        );
        assert_eq!(trim_bytes(&f, 20, 5, false), None, "head = frame length");
        assert_eq!(trim_bytes(&f, 25, 5, false), None, "head past the end");
        assert_eq!(trim_bytes(&f, 2, 0, false), None, "len 0");
        assert_eq!(trim_bytes(&f, 0, 20, true), None, "drop");
        assert_eq!(
            trim_bytes(&f, usize::MAX, usize::MAX, false),
            None,
            "no overflow"
        );
        assert_eq!(
            trim_bytes(&f, 3, usize::MAX, false),
            Some(f[3..].to_vec()),
            "no overflow in head + len"
        );
    }
}
