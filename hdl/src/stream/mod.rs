//! AXI-Stream: the one interface every datapath block speaks.
//!
//! At the Verilog boundary a stream is `<prefix>_tdata/_tkeep/_tvalid/_tready/_tlast/_tuser`;
//! streams a block consumes are `s_axis*`, streams it produces `m_axis*`; with several streams
//! the role goes first (`m_axis_csum_*`).
//!
//! ## Handshake rules
//! Rules 1-5 are asserted by `nicgen_tb::stream::StreamMonitor` on every stream in every test
//! (the numbers match its violation messages); rule 6 is a design rule every block keeps.
//! 1. **Hold**: while `tvalid && !tready`, `tvalid` stays high and `tdata/tkeep/tlast/tuser`
//!    stay stable on the next cycle.
//! 2. **Transfer**: a beat moves on a rising edge where `tvalid && tready`, and only then.
//! 3. **Full beats inside a frame**: every beat but the last of a frame has all `tkeep` bits set.
//! 4. **Last beat**: the `tlast` beat keeps a non-empty run of bytes starting at byte 0.
//! 5. **No X**: no unknown bits on valid beats (vacuous in 2-state Verilator; the Icarus replay
//!    checks X on payloads while `tvalid` is high).
//! 6. **Valid never waits for ready**: no combinational path from a stream's `tready` to its own
//!    `tvalid`; a sink may wait for `tvalid` before raising `tready`.
//!
//! Bytes are little-endian on the bus: byte `i` of a beat is `tdata[8i+7:8i]`, kept when
//! `tkeep[i]` is set; the first byte of a frame is byte 0 of its first beat.
//!
//! ## `tuser` / sideband bits (one table for the whole project)
//! | bit | name | meaning |
//! |---|---|---|
//! | 0 | `bad` | frame is bad and must be dropped by the next frame FIFO (valid on the `tlast` beat) |

pub mod record_fifo;
pub mod record_reg_slice;
pub mod stream_bytes;
pub mod stream_delete;
pub mod stream_fifo;
pub mod stream_fork;
pub mod stream_fwd_reg;
pub mod stream_insert;
pub mod stream_skid;
pub mod stream_trim;
pub mod stream_width;

pub use record_fifo::{record_fifo, RecordFifoPorts};
pub use record_reg_slice::{
    beat_reg_slice, record_fwd_reg, record_reg_slice, record_reg_slice_ctl, record_reg_slice_wide,
    stream_reg_slice, BeatReg, RecordReg,
};
pub use stream_bytes::{OutStage, SpliceCmd, SplicePorts};
pub use stream_delete::{stream_delete, DeleteCfg};
pub use stream_fifo::{
    stream_fifo, stream_fifo_in, stream_fifo_room, FifoCfg, FifoDrops, FifoPorts, FifoRam,
};
pub use stream_fork::{stream_fork, stream_fork_buffered, ForkPorts};
pub use stream_fwd_reg::{stream_fwd_reg, PassPorts};
pub use stream_insert::{stream_insert, InsertCfg};
pub use stream_skid::stream_skid;
pub use stream_trim::{stream_trim, TrimCfg, TrimCmd, TrimPorts};
pub use stream_width::{stream_narrow, stream_widen, WidthCfg, WidthPorts};

use nicgen_edsl::prelude::*;

/// `tuser` bit: the frame is bad (drop it at the next frame FIFO).
pub const TUSER_BAD: u32 = 0;

/// Shape of a stream: data width and sideband width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamCfg {
    /// `tdata` width; whole bytes: 8 or a multiple of 16.
    pub data_bits: u32,
    /// `tuser` width; 0 for no `tuser` port.
    pub user_bits: u32,
}

impl StreamCfg {
    pub fn new(data_bits: u32, user_bits: u32) -> Self {
        StreamCfg {
            data_bits,
            user_bits,
        }
    }
    pub fn keep_bits(&self) -> u32 {
        self.data_bits / 8
    }
    /// The ports, in port order: `tdata, tkeep, tvalid, tready (backward), tlast[, tuser]`.
    fn fields(&self) -> Vec<(&'static str, u32, Flow)> {
        let mut v = vec![
            ("tdata", self.data_bits, Flow::Forward),
            ("tkeep", self.keep_bits(), Flow::Forward),
            ("tvalid", 1, Flow::Forward),
            ("tready", 1, Flow::Backward),
            ("tlast", 1, Flow::Forward),
        ];
        if self.user_bits > 0 {
            v.push(("tuser", self.user_bits, Flow::Forward));
        }
        v
    }
    /// Reject shapes the blocks cannot be built with.
    #[track_caller]
    pub fn check(&self, block: &str) -> Result<(), ElabError> {
        if self.data_bits == 0 || !self.data_bits.is_multiple_of(8) {
            return Err(ElabError::config(
                block,
                format!("stream data width {} is not whole bytes", self.data_bits),
            ));
        }
        if self.data_bits != 8 && !self.data_bits.is_multiple_of(16) {
            return Err(ElabError::config(
                block,
                format!(
                    "stream data width {} must be 8 or a multiple of 16 bits",
                    self.data_bits
                ),
            ));
        }
        Ok(())
    }
    /// A short suffix for module names: `d64` or `d64u1`.
    pub fn suffix(&self) -> String {
        if self.user_bits > 0 {
            format!("d{}u{}", self.data_bits, self.user_bits)
        } else {
            format!("d{}", self.data_bits)
        }
    }
}

nicgen_edsl::record! {
    /// One beat's payload as a word (a FIFO entry, a register slice's data): every forward
    /// field of the stream but `tvalid`, `tdata` in the least significant bits.
    pub struct Beat(data_bits: u32, user_bits: u32) {
        data: data_bits,
        keep: data_bits / 8,
        last: 1,
        /// Left out (width 0) on a stream without `tuser`.
        user: user_bits,
    }
}

impl StreamCfg {
    /// The shape of this stream's beat ([`Beat`]).
    pub fn beat(&self) -> Beat<u32> {
        Beat::shape(self.data_bits, self.user_bits)
    }
}

/// The signals of one stream, as the module that declared it sees them (its own ports, or an
/// instance's seen from the parent): inputs are values to read, outputs wires to drive.
#[derive(Clone, Debug)]
pub struct Stream {
    data: Sig,
    keep: Sig,
    valid: Sig,
    ready: Sig,
    last: Sig,
    user: Option<Sig>,
}

impl Stream {
    pub fn data(&self) -> Sig {
        self.data
    }
    pub fn keep(&self) -> Sig {
        self.keep
    }
    pub fn valid(&self) -> Sig {
        self.valid
    }
    pub fn ready(&self) -> Sig {
        self.ready
    }
    pub fn last(&self) -> Sig {
        self.last
    }
    /// `tuser`, on a stream that has it.
    pub fn user(&self) -> Option<Sig> {
        self.user
    }

    /// A stream the module consumes (`s_axis`-style ports), declared through `io` (the module's
    /// own ports, or an instance's seen from its parent).
    #[track_caller]
    pub fn sink(io: &Io, prefix: &str, cfg: &StreamCfg) -> Stream {
        Stream::declare(io, Role::Sink, prefix, cfg)
    }

    /// A stream the module produces (`m_axis`-style ports).
    #[track_caller]
    pub fn source(io: &Io, prefix: &str, cfg: &StreamCfg) -> Stream {
        Stream::declare(io, Role::Source, prefix, cfg)
    }

    #[track_caller]
    fn declare(io: &Io, role: Role, prefix: &str, cfg: &StreamCfg) -> Stream {
        // A loop, not a closure, so that each port's source location is the caller's.
        let mut sigs = Vec::new();
        for (name, w, flow) in cfg.fields() {
            let port = format!("{prefix}_{name}");
            sigs.push(match flow {
                Flow::Forward => io.forward(role, &port, w),
                Flow::Backward => io.backward(role, &port, w),
            });
        }
        Stream {
            data: sigs[0],
            keep: sigs[1],
            valid: sigs[2],
            ready: sigs[3],
            last: sigs[4],
            user: sigs.get(5).copied(),
        }
    }

    /// The forward payload ports (everything but valid and ready) by port name, in port
    /// order: `tdata, tkeep, tlast[, tuser]`.
    pub fn payload(&self) -> Vec<(&'static str, Sig)> {
        let mut v = vec![
            ("tdata", self.data),
            ("tkeep", self.keep),
            ("tlast", self.last),
        ];
        v.extend(self.user.map(|u| ("tuser", u)));
        v
    }

    /// A beat moves in this cycle (`tvalid && tready`).
    #[track_caller]
    pub fn fire(&self) -> Sig {
        self.valid & self.ready
    }

    /// The beat's payload (read side); `user` is left out on a stream without `tuser`.
    pub fn beat(&self) -> Beat {
        Beat {
            data: self.data,
            keep: self.keep,
            last: self.last,
            user: self.user.unwrap_or_else(|| Sig::absent("Beat", "user")),
        }
    }

    /// Drive the beat's payload (write side); `b.user` is read only when the stream has
    /// `tuser`.
    #[track_caller]
    pub fn set_beat(&self, b: &Beat) {
        self.data.set(b.data);
        self.keep.set(b.keep);
        self.last.set(b.last);
        if let Some(u) = self.user {
            u.set(b.user);
        }
    }
}

impl Interface for Stream {
    /// In port order: `tdata, tkeep, tvalid, tready (backward), tlast[, tuser]`.
    fn signals(&self) -> Vec<(Sig, Flow)> {
        let mut v = vec![
            (self.data, Flow::Forward),
            (self.keep, Flow::Forward),
            (self.valid, Flow::Forward),
            (self.ready, Flow::Backward),
            (self.last, Flow::Forward),
        ];
        v.extend(self.user.map(|u| (u, Flow::Forward)));
        v
    }
}
