//! Frame scoreboard: compares expected frames (from the golden model) with the frames a design
//! produced, in order, and explains the first mismatch with a hex diff.
//!
//! # Why
//! A block test's verdict is "the bytes out equal the model's bytes", frame by frame. When they
//! differ, the reader needs the frame index, both lengths, the first differing offset and the
//! bytes around it side by side, not two 1500-byte dumps. Frames are matched by index (the
//! n-th actual frame against the n-th expected one); the scoreboard counts matches and reports
//! frames that are missing or unexpected at the end.

use std::collections::VecDeque;
use std::fmt::Write as _;

/// Bytes per row of the hex diff.
const ROW: usize = 16;
/// Rows shown before the row with the first difference.
const ROWS_BEFORE: usize = 1;
/// Rows shown in total.
const ROWS_SHOWN: usize = 4;

/// Why a scoreboard check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScoreboardError {
    /// An actual frame differs from its expected frame.
    #[error(transparent)]
    Mismatch(#[from] FrameMismatch),
    /// A frame arrived with nothing left to expect.
    #[error("{name}: unexpected frame {index} ({len} bytes): all {index} expected frames were already received{}", seed_text(*.seed))]
    Unexpected {
        /// Scoreboard name.
        name: String,
        /// Index of the extra frame.
        index: usize,
        /// Its length.
        len: usize,
        /// Test seed, if given.
        seed: Option<u64>,
    },
    /// Expected frames never arrived.
    #[error("{name}: {missing} expected frame(s) never arrived, first missing is frame {first_index} ({first_len} bytes){}", seed_text(*.seed))]
    Missing {
        /// Scoreboard name.
        name: String,
        /// How many.
        missing: usize,
        /// Index of the first missing frame.
        first_index: usize,
        /// Its length.
        first_len: usize,
        /// Test seed, if given.
        seed: Option<u64>,
    },
}

fn seed_text(seed: Option<u64>) -> String {
    seed.map(|s| format!(" (seed {s:#x})")).unwrap_or_default()
}

/// The first difference between an expected and an actual frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: frame {index} differs{}: expected {expected_len} bytes, got {actual_len}; first difference at byte {offset}\n{window}", seed_text(*.seed))]
pub struct FrameMismatch {
    /// Scoreboard name.
    pub name: String,
    /// Frame index.
    pub index: usize,
    /// Expected length.
    pub expected_len: usize,
    /// Actual length.
    pub actual_len: usize,
    /// First differing offset (the shorter length if one frame is a prefix of the other).
    pub offset: usize,
    /// The hex diff around `offset`.
    pub window: String,
    /// Test seed, if given.
    pub seed: Option<u64>,
}

/// Counts kept by a [`Scoreboard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Frames that matched.
    pub matched: usize,
    /// Frames expected but not yet received.
    pub pending: usize,
    /// Bytes in matched frames.
    pub bytes: usize,
}

/// An in-order frame scoreboard.
#[derive(Debug, Clone)]
pub struct Scoreboard {
    name: String,
    seed: Option<u64>,
    expected: VecDeque<Vec<u8>>,
    next_index: usize,
    matched: usize,
    bytes: usize,
}

impl Scoreboard {
    /// A scoreboard; `name` (e.g. the output stream) starts every message.
    pub fn new(name: impl Into<String>) -> Scoreboard {
        Scoreboard {
            name: name.into(),
            seed: None,
            expected: VecDeque::new(),
            next_index: 0,
            matched: 0,
            bytes: 0,
        }
    }

    /// Quotes `seed` in every error.
    pub fn with_seed(mut self, seed: u64) -> Scoreboard {
        self.seed = Some(seed);
        self
    }

    /// Adds the next expected frame.
    pub fn expect(&mut self, frame: impl Into<Vec<u8>>) {
        self.expected.push_back(frame.into());
    }

    /// Compares an actual frame with the oldest expected one.
    pub fn check(&mut self, actual: &[u8]) -> Result<(), ScoreboardError> {
        let index = self.next_index;
        let Some(expected) = self.expected.pop_front() else {
            return Err(ScoreboardError::Unexpected {
                name: self.name.clone(),
                index,
                len: actual.len(),
                seed: self.seed,
            });
        };
        self.next_index += 1;
        if let Some(mut m) = diff(&expected, actual) {
            m.name = self.name.clone();
            m.index = index;
            m.seed = self.seed;
            return Err(m.into());
        }
        self.matched += 1;
        self.bytes += actual.len();
        Ok(())
    }

    /// Checks several actual frames in order.
    pub fn check_all<T: AsRef<[u8]>>(&mut self, actual: &[T]) -> Result<(), ScoreboardError> {
        actual.iter().try_for_each(|f| self.check(f.as_ref()))
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        Counts {
            matched: self.matched,
            pending: self.expected.len(),
            bytes: self.bytes,
        }
    }

    /// Ends the test: fails if expected frames are still pending.
    pub fn finish(&self) -> Result<Counts, ScoreboardError> {
        match self.expected.front() {
            None => Ok(self.counts()),
            Some(first) => Err(ScoreboardError::Missing {
                name: self.name.clone(),
                missing: self.expected.len(),
                first_index: self.next_index,
                first_len: first.len(),
                seed: self.seed,
            }),
        }
    }
}

/// Compares two lists of frames by index; returns the number of frames on success.
pub fn compare_frames<E: AsRef<[u8]>, A: AsRef<[u8]>>(
    name: &str,
    expected: &[E],
    actual: &[A],
) -> Result<usize, ScoreboardError> {
    let mut sb = Scoreboard::new(name);
    for e in expected {
        sb.expect(e.as_ref());
    }
    sb.check_all(actual)?;
    sb.finish().map(|c| c.matched)
}

/// The first difference between two frames, or `None` if they are equal. `name` and `index`
/// of the result are left empty/0 for the caller to fill in.
pub fn diff(expected: &[u8], actual: &[u8]) -> Option<FrameMismatch> {
    let offset = expected
        .iter()
        .zip(actual)
        .position(|(e, a)| e != a)
        .unwrap_or(expected.len().min(actual.len()));
    if offset == expected.len() && offset == actual.len() {
        return None;
    }
    Some(FrameMismatch {
        name: String::new(),
        index: 0,
        expected_len: expected.len(),
        actual_len: actual.len(),
        offset,
        window: hex_window(expected, actual, offset),
        seed: None,
    })
}

/// Side-by-side hex rows around `offset`: `expected`, `actual`, and a marker row with `^^`
/// under each differing byte; `--` where a frame has no byte.
pub fn hex_window(expected: &[u8], actual: &[u8], offset: usize) -> String {
    let first_row = (offset / ROW).saturating_sub(ROWS_BEFORE);
    let end = expected.len().max(actual.len());
    let mut out = String::new();
    for row in first_row..first_row + ROWS_SHOWN {
        let start = row * ROW;
        if start >= end && row > offset / ROW {
            break;
        }
        let cell = |f: &[u8], i: usize| {
            f.get(i)
                .map(|b| format!("{b:02x}"))
                .unwrap_or_else(|| "--".into())
        };
        let line = |f: &[u8]| {
            (start..start + ROW)
                .map(|i| cell(f, i))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let marks = (start..start + ROW)
            .map(|i| {
                if expected.get(i) != actual.get(i) {
                    "^^"
                } else {
                    "  "
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        writeln!(out, "  expected {start:04x}: {}", line(expected)).unwrap();
        writeln!(out, "  actual   {start:04x}: {}", line(actual)).unwrap();
        if marks.contains('^') {
            writeln!(out, "                 {}", marks.trim_end()).unwrap();
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_frames_count() {
        let mut sb = Scoreboard::new("m_axis");
        sb.expect(vec![1, 2, 3]);
        sb.expect(vec![4]);
        sb.check(&[1, 2, 3]).unwrap();
        assert_eq!(
            sb.counts(),
            Counts {
                matched: 1,
                pending: 1,
                bytes: 3
            }
        );
        sb.check(&[4]).unwrap();
        assert_eq!(
            sb.finish().unwrap(),
            Counts {
                matched: 2,
                pending: 0,
                bytes: 4
            }
        );
    }

    #[test]
    fn first_mismatch_has_index_offset_and_window() {
        let expected: Vec<u8> = (0..64).collect();
        let mut actual = expected.clone();
        actual[37] = 0xee;
        actual[40] = 0xdd;
        let mut sb = Scoreboard::new("m_axis").with_seed(0x1234);
        sb.expect(vec![9]);
        sb.expect(expected);
        sb.check(&[9]).unwrap();
        let err = sb.check(&actual).unwrap_err();
        let ScoreboardError::Mismatch(m) = &err else {
            panic!("{err}")
        };
        assert_eq!(
            (m.index, m.offset, m.expected_len, m.actual_len),
            (1, 37, 64, 64)
        );
        let text = err.to_string();
        assert!(text.starts_with("m_axis: frame 1 differs (seed 0x1234): expected 64 bytes, got 64; first difference at byte 37"), "{text}");
        assert!(
            text.contains("  expected 0020: 20 21 22 23 24 25 26 27 28 29"),
            "{text}"
        );
        assert!(
            text.contains("  actual   0020: 20 21 22 23 24 ee 26 27 dd 29"),
            "{text}"
        );
        // Markers under bytes 0x25 and 0x28 of row 0x20.
        let marker = text.lines().find(|l| l.contains("^^")).unwrap();
        assert_eq!(
            marker.find("^^").unwrap(),
            "  expected 0020: ".len() + 5 * 3
        );
        // Rows 0x10..0x40 shown, row 0x00 not.
        assert!(text.contains("0010:") && !text.contains("0000:"), "{text}");
    }

    #[test]
    fn length_differences_show_missing_bytes() {
        let m = diff(&[1, 2, 3, 4], &[1, 2]).unwrap();
        assert_eq!(m.offset, 2);
        assert!(
            m.window.contains("actual   0000: 01 02 -- --"),
            "{}",
            m.window
        );
        assert!(diff(&[1, 2], &[1, 2]).is_none());
        assert_eq!(diff(&[], &[7]).unwrap().offset, 0);
    }

    #[test]
    fn missing_and_unexpected_frames() {
        let err = compare_frames("out", &[vec![1u8], vec![2, 2]], &[vec![1u8]]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "out: 1 expected frame(s) never arrived, first missing is frame 1 (2 bytes)"
        );
        let err = compare_frames("out", &[vec![1u8]], &[vec![1u8], vec![5]]).unwrap_err();
        assert!(
            err.to_string().contains("unexpected frame 1 (1 bytes)"),
            "{err}"
        );
        assert_eq!(
            compare_frames::<Vec<u8>, Vec<u8>>("out", &[], &[]).unwrap(),
            0
        );
    }
}
