//! Frame-level models of the stream primitives.
//!
//! The forward register, skid buffer and plain FIFO are the identity on frames (same frames,
//! same order, same bytes). The frame FIFO drops frames marked bad and frames larger than its
//! capacity; [`fifo_frames`] says which, in bytes rather than beats: a FIFO of `depth` beats of
//! `w` bytes holds `depth * w` bytes, and a frame longer than that can never be stored whole.

/// One frame offered to a stream block: its bytes and its `bad` mark (`tuser[0]` on `tlast`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedFrame {
    pub bytes: Vec<u8>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
