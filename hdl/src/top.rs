//! `nic_core`: the preset's Ethernet core: the TX and RX offload paths and the MAC-side
//! loopback.
//!
//! ```text
//!  host side                                                           MAC side
//!  s_axis_tx + s_axis_tx_cmd --> eth_tx --(wire, FCS)--+--------------> m_axis_mac_tx
//!                                                      | loopback
//!  m_axis_rx + m_axis_rx_meta <-- eth_rx <--(wire)-----+<-------------- s_axis_mac_rx
//! ```
//!
//! With `cfg_loopback` set, what the TX path puts on the wire enters the RX path instead of
//! `m_axis_mac_tx` (which stays idle), and `s_axis_mac_rx` is held (`tready` low) — the
//! ConnectX "MAC loopback". The mode changes only between frames: when `cfg_loopback` differs
//! from the current mode (`loopback_active`), no new frame starts on either wire until both
//! are between frames, then the mode flips; a frame already offered on `m_axis_mac_tx` stays
//! offered until taken (stream rule 1). So a frame is never split between the two routes and
//! toggling the mode under traffic loses nothing.
//!
//! - Ports ([`NicCorePorts`]): `s_axis_tx_*` (frames from the host, no FCS; `tuser`: an LSO
//!   send aborted), `s_axis_tx_cmd_*`
//!   (one [`TxCmd`] per frame), `m_axis_rx_*` (delivered frames), `m_axis_rx_meta_*` (one
//!   [`RxMeta`] per received frame), `m_axis_mac_tx_*` / `s_axis_mac_rx_*` (wire frames with
//!   FCS), `cfg_loopback`, `cfg_we/_addr/_wdata` (RSS, see `rss_toeplitz`), `loopback_active`,
//!   `stat_rx_<name>` (RX counters, [`RxStats`]) and `stat_tx_frames` (64 bits each).
//! - Latency and throughput: those of `eth_tx` and `eth_rx` (results/PIPELINE.md); the
//!   loopback switch is combinational and adds no cycle.
//! - Cost: `eth_tx` and `eth_rx` (results/AREA-paths.md) and the loopback switch.
//! - Golden model: `nicgen_model::tx::tx_frame` then `nicgen_model::rx::rx_frame`; test:
//!   `testbench/tests/top/nic_core.rs`.

use crate::eth::eth_rx::{eth_rx, RxCfg, RxMeta, RxStats};
use crate::eth::eth_tx::{eth_tx, TxCfg, TxCmd};
use crate::preset::Preset;
use crate::rss::rss_toeplitz::{CfgWrite, RssCfg};
use crate::stream::{Beat, Stream, StreamCfg};
use nicgen_edsl::prelude::*;

/// The RX path configuration of a preset.
pub fn rx_cfg(p: &Preset) -> RxCfg {
    RxCfg {
        data_bits: p.data_bits,
        mtu: p.mtu,
        window: p.parser.window,
        rss: RssCfg {
            table_size: p.rss.table_size,
            queues: p.rss.queues,
            // The RX path pops an RSS result only when it emits the frame's record, with the
            // checksum verdict: more than 16 cycles after dispatch at 512 bits (request slices
            // and queues, rx_csum's latency, the result slices); with 16 credits one-beat
            // frames took 1.03 cycles each (`rx_path_takes_back_to_back_frames_without_bubbles`).
            result_depth: 32,
            ..RssCfg::default()
        },
        levels_per_stage: p.csum.levels_per_stage,
        steer_entries: p.overlay.steer_entries,
    }
}

/// The TX path configuration of a preset.
pub fn tx_cfg(p: &Preset) -> TxCfg {
    TxCfg {
        data_bits: p.data_bits,
        mtu: p.mtu,
        window: p.parser.window,
        levels_per_stage: p.csum.levels_per_stage,
        max_mss: p.overlay.max_mss,
        encap_contexts: p.overlay.encap_contexts,
    }
}

/// Where the encapsulation contexts sit in the core's configuration window: context `c`'s word
/// `w` at `ENCAP_CTX + 16 c + w`, above the RSS table and below the tunnel steering table.
pub const ENCAP_CTX: u32 = 0x900;

/// The stream shape of every data port of the top (no sideband).
pub fn top_stream(p: &Preset) -> StreamCfg {
    StreamCfg::new(p.data_bits, 0)
}

/// The ports of [`nic_core()`].
pub struct NicCorePorts {
    /// Frames from the host, no FCS (`s_axis_tx_*`; `tuser`: an LSO send aborted, on its last
    /// beat, see `eth_tx`), and one command each (`s_axis_tx_cmd_*`).
    pub tx: Stream,
    pub tx_cmd: RecordStream<TxCmd<u32>>,
    /// Delivered frames (`m_axis_rx_*`) and one record per received frame
    /// (`m_axis_rx_meta_*`).
    pub rx: Stream,
    pub rx_meta: RecordStream<RxMeta<u32>>,
    /// The wire, FCS included (`m_axis_mac_tx_*`, `s_axis_mac_rx_*`).
    pub mac_tx: Stream,
    pub mac_rx: Stream,
    /// Loop the TX wire into the RX path (`cfg_loopback`) and the mode in force
    /// (`loopback_active`).
    pub loopback: Sig,
    pub loopback_active: Sig,
    /// RSS configuration writes (`cfg_we/_addr/_wdata`).
    pub cfg: CfgWrite,
    /// The RX counters (`stat_rx_<name>`), the frames sent (`stat_tx_frames`) and the TX
    /// path's drops (`stat_tx_lso_bad`, `stat_tx_encap_drop`), 64-bit counters.
    pub rx_stats: RxStats,
    pub tx_frames: Sig,
    pub tx_lso_bad: Sig,
    pub tx_encap_drop: Sig,
}

impl Ports for NicCorePorts {
    type Cfg = Preset;
    fn ports(io: &Io, p: &Preset) -> Self {
        let s = top_stream(p);
        NicCorePorts {
            tx: Stream::sink(io, "s_axis_tx", &StreamCfg::new(p.data_bits, 1)),
            tx_cmd: RecordStream::sink(io, "s_axis_tx_cmd", TxCmd::shape()),
            rx: Stream::source(io, "m_axis_rx", &s),
            rx_meta: RecordStream::source(
                io,
                "m_axis_rx_meta",
                RxMeta::shape(rx_cfg(p).rss.queue_bits()),
            ),
            mac_tx: Stream::source(io, "m_axis_mac_tx", &s),
            mac_rx: Stream::sink(io, "s_axis_mac_rx", &s),
            loopback: io.input("cfg_loopback", 1),
            loopback_active: io.output("loopback_active", 1),
            cfg: io.inputs("cfg_", &CfgWrite::shape()),
            rx_stats: io.outputs("stat_rx_", &RxStats::shape()),
            tx_frames: io.output("stat_tx_frames", 64),
            tx_lso_bad: io.output("stat_tx_lso_bad", 64),
            tx_encap_drop: io.output("stat_tx_encap_drop", 64),
        }
    }
}

pub fn nic_core(p: &Preset) -> Result<Block<NicCorePorts>, ElabError> {
    let tx = eth_tx(&tx_cfg(p))?;
    let rx = eth_rx(&rx_cfg(p))?;
    let encap_words = tx_cfg(p).encap_contexts * 16;
    Block::build("nic_core", p.clone(), move |p: NicCorePorts| {
        doc("nicgen NIC core: TX offload path, RX offload path, MAC-side loopback.");
        // Host side.
        let u_tx = tx.instance("u_eth_tx");
        connect(&p.tx, &u_tx.s_axis);
        connect(&p.tx_cmd, &u_tx.cmd);
        let u_rx = rx.instance("u_eth_rx");
        connect(&u_rx.m_axis, &p.rx);
        connect(&u_rx.meta, &p.rx_meta);
        connect(&p.cfg, &u_rx.cfg);
        if let Some(e) = &u_tx.encap_cfg {
            // The window's encapsulation contexts go to the TX path; RSS and the tunnel stage
            // decode other addresses.
            let n = encap_words;
            let at = p.cfg.addr;
            let hit = (at.ge(ENCAP_CTX) & at.lt(ENCAP_CTX + n)).named("cfg_encap_hit");
            e.we.set(p.cfg.we & hit);
            e.addr.set((at - ENCAP_CTX).resize(e.addr.width()));
            e.wdata.set(p.cfg.wdata);
        }
        let _ = u_rx.drop_bad.unused(); // counted by reason in stat_rx_*
        connect(&u_rx.stats, &p.rx_stats);

        // MAC side: the loopback switch between the TX wire `t` and the RX wire `r`.
        let t = &u_tx.m_axis;
        let (mac_tx, mac_rx) = (&p.mac_tx, &p.mac_rx);
        let want = p.loopback;
        let lb = reg_init(1, 0u32).named("loopback");
        p.loopback_active.set(lb);
        let pending = (want ^ lb).named("mode_change_pending");
        let t_in_frame = reg_init(1, 0u32).named("tx_in_frame");
        let r_in_frame = reg_init(1, 0u32).named("rx_in_frame");
        // A first beat offered on m_axis_mac_tx and not yet taken stays offered (rule 1).
        let mac_tx_stalled = reg_init(1, 0u32).named("mac_tx_stalled");
        let go_t = (!pending | t_in_frame | mac_tx_stalled).named("tx_may_move");
        let go_r = (!pending | r_in_frame).named("rx_may_move");
        lb.set_if(pending & !t_in_frame & !r_in_frame & !mac_tx_stalled, want);

        let r = &u_rx.s_axis;
        let r_ready = r.ready();
        let r_valid =
            mux(lb, t.valid() & go_t & go_r, mac_rx.valid() & go_r).named("rx_wire_valid");
        let (looped, own) = (t.beat(), mac_rx.beat());
        r.set_beat(&Beat {
            data: mux(lb, looped.data, own.data),
            keep: mux(lb, looped.keep, own.keep),
            last: mux(lb, looped.last, own.last),
            user: own.user,
        });
        r.valid().set(r_valid);
        mac_rx.ready().set(!lb & go_r & r_ready);

        let mac_tx_valid = (!lb & t.valid() & go_t).named("mac_tx_valid");
        mac_tx.set_beat(&t.beat());
        mac_tx.valid().set(mac_tx_valid);
        t.ready()
            .set(mux(lb, r_ready & go_t & go_r, mac_tx.ready() & go_t));
        mac_tx_stalled.set(mac_tx_valid & !mac_tx.ready());

        let t_beat = (t.valid() & t.ready()).named("tx_wire_beat");
        let r_beat = (r_valid & r_ready).named("rx_wire_beat");
        t_in_frame.set_if(t_beat, !t.last());
        r_in_frame.set_if(r_beat, !mux(lb, t.last(), mac_rx.last()));

        let tx_frames = reg_init(64, 0u32).named("count_tx_frames");
        tx_frames.set_if(t_beat & t.last(), tx_frames + 1u32);
        p.tx_frames.set(tx_frames);
        for (pulse, out, name) in [
            (u_tx.stats.lso_bad, p.tx_lso_bad, "count_tx_lso_bad"),
            (
                u_tx.stats.encap_drop,
                p.tx_encap_drop,
                "count_tx_encap_drop",
            ),
        ] {
            let n = reg_init(64, 0u32).named(name);
            n.set_if(pulse, n + 1u32);
            out.set(n);
        }
    })
}
