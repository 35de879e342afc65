//! `nic_core`: the preset's top. Until the NIC top exists it wires the foundation blocks into
//! one datapath at the preset's width:
//!
//! ```text
//! s_axis -> stream_fwd_reg -> stream_fifo (frame mode) -> stream_skid -+-> m_axis
//!                                                                      +-> inet_csum -> m_axis_csum
//! ```
//!
//! The fork after the skid buffer is [`crate::stream::stream_fork`]: each side sees every beat
//! exactly once.

use crate::csum::{inet_csum, CsumCfg};
use crate::preset::Preset;
use crate::stream::{
    stream_fifo, stream_fork, stream_fwd_reg, stream_in, stream_out, stream_skid, FifoCfg, Stream,
    StreamCfg,
};
use nicgen_edsl::prelude::*;

/// The stream shape at the top's ports for a preset.
pub fn top_stream(p: &Preset) -> StreamCfg {
    StreamCfg::new(p.data_bits, 1)
}

pub fn nic_core(p: &Preset) -> Result<Rc<ModuleDef>, ElabError> {
    let scfg = top_stream(p);
    let fwd = stream_fwd_reg(&scfg)?;
    let fifo = stream_fifo(&FifoCfg {
        stream: scfg,
        depth: p.fifo.depth,
        frame_mode: p.fifo.frame_mode,
    })?;
    let skid = stream_skid(&scfg)?;
    let fork = stream_fork(&scfg, &["out", "sum"])?;
    let csum = inet_csum(&CsumCfg {
        data_bits: p.data_bits,
        levels_per_stage: p.csum.levels_per_stage,
    })?;
    let frame_mode = p.fifo.frame_mode;
    Module::build("nic_core", move || {
        doc("nicgen NIC core (foundation datapath): forward register, frame FIFO, skid buffer,");
        doc("and an Internet-checksum stage on a fork of the output stream.");
        let s = stream_in("s_axis", &scfg);
        let m = stream_out("m_axis", &scfg);
        let u_fwd = instance(&fwd, "u_in_reg");
        u_fwd.connect_in("s_axis", &s.0);
        let a = u_fwd.bundle_out("m_axis", &scfg.spec());
        let u_fifo = instance(&fifo, "u_fifo");
        u_fifo.connect_in("s_axis", &a);
        let b = u_fifo.bundle_out("m_axis", &scfg.spec());
        if frame_mode {
            output("stat_drop_bad", u_fifo.get("stat_drop_bad"));
            output("stat_drop_oversize", u_fifo.get("stat_drop_oversize"));
        }
        let u_skid = instance(&skid, "u_out_skid");
        u_skid.connect_in("s_axis", &b);
        let c = Stream(u_skid.bundle_out("m_axis", &scfg.spec()));

        // Fork to m_axis and the checksum stage.
        let u_fork = instance(&fork, "u_fork");
        u_fork.connect_in("s_axis", &c.0);
        connect(&m.0, &u_fork.bundle_out("m_axis_out", &scfg.spec()));
        let f = Stream(u_fork.bundle_out("m_axis_sum", &scfg.spec()));
        u_fork.unused("m_axis_sum_tuser");
        let u_csum = instance(&csum, "u_csum");
        f.ready().set(u_csum.get("s_axis_tready"));
        let c_valid = f.valid();
        u_csum.set("s_axis_tdata", f.data());
        u_csum.set("s_axis_tkeep", f.keep());
        u_csum.set("s_axis_tlast", f.last());
        u_csum.set("s_axis_tvalid", c_valid);
        for f in ["tdata", "tkeep", "tvalid", "tlast"] {
            output(
                &format!("m_axis_csum_{f}"),
                u_csum.get(&format!("m_axis_csum_{f}")),
            );
        }
        u_csum.set("m_axis_csum_tready", input("m_axis_csum_tready", 1));
    })
}
