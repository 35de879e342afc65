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
//! - Ports: `s_axis_tx_*` (frames from the host, no FCS), `s_axis_tx_cmd_*` (one
//!   [`crate::eth::eth_tx::TX_CMD`] per frame), `m_axis_rx_*` (delivered frames),
//!   `m_axis_rx_meta_*` (one [`crate::eth::eth_rx::rx_meta`] per received frame),
//!   `m_axis_mac_tx_*` / `s_axis_mac_rx_*` (wire frames with FCS), `cfg_loopback`,
//!   `cfg_we/_addr/_wdata` (RSS, see `rss_toeplitz`), `loopback_active`, `stat_rx_<name>`
//!   (RX counters, [`crate::eth::eth_rx::RX_STATS`]) and `stat_tx_frames` (64 bits each).
//! - Latency and throughput: those of `eth_tx` and `eth_rx` (results/PIPELINE.md); the
//!   loopback switch is combinational and adds no cycle.
//! - Cost: `eth_tx` and `eth_rx` (results/AREA-paths.md) and the loopback switch.
//! - Golden model: `nicgen_model::tx::tx_frame` then `nicgen_model::rx::rx_frame`; test:
//!   `testbench/tests/top/nic_core.rs`.

use crate::eth::eth_rx::{eth_rx, RxCfg, RX_STATS};
use crate::eth::eth_tx::{eth_tx, TxCfg, TX_CMD};
use crate::preset::Preset;
use crate::rss::rss_toeplitz::RssCfg;
use crate::stats::stat_counters;
use crate::stream::{stream_in, stream_out, Stream, StreamCfg};
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
    }
}

/// The TX path configuration of a preset.
pub fn tx_cfg(p: &Preset) -> TxCfg {
    TxCfg {
        data_bits: p.data_bits,
        mtu: p.mtu,
        window: p.parser.window,
        levels_per_stage: p.csum.levels_per_stage,
    }
}

/// The stream shape of every data port of the top (no sideband).
pub fn top_stream(p: &Preset) -> StreamCfg {
    StreamCfg::new(p.data_bits, 0)
}

pub fn nic_core(p: &Preset) -> Result<Rc<ModuleDef>, ElabError> {
    let scfg = top_stream(p);
    let rcfg = rx_cfg(p);
    let tx = eth_tx(&tx_cfg(p))?;
    let rx = eth_rx(&rcfg)?;
    let tx_stats = stat_counters("tx", &["frames"], 64)?;
    let rss_addr_bits = crate::rss::rss_toeplitz::cfg_addr::BITS;
    Module::build("nic_core", move || {
        doc("nicgen NIC core: TX offload path, RX offload path, MAC-side loopback.");
        let spec = scfg.spec();
        // Host side.
        let u_tx = instance(&tx, "u_eth_tx");
        u_tx.connect_in("s_axis", &stream_in("s_axis_tx", &scfg).0);
        u_tx.set(
            "s_axis_cmd_tdata",
            input("s_axis_tx_cmd_tdata", TX_CMD.width()),
        );
        u_tx.set("s_axis_cmd_tvalid", input("s_axis_tx_cmd_tvalid", 1));
        output("s_axis_tx_cmd_tready", u_tx.get("s_axis_cmd_tready"));
        let u_rx = instance(&rx, "u_eth_rx");
        connect_bundles(
            &stream_out("m_axis_rx", &scfg).0,
            &u_rx.bundle_out("m_axis", &spec),
        );
        for f in ["tdata", "tvalid"] {
            output(
                &format!("m_axis_rx_meta_{f}"),
                u_rx.get(&format!("m_axis_meta_{f}")),
            );
        }
        u_rx.set("m_axis_meta_tready", input("m_axis_rx_meta_tready", 1));
        u_rx.set("cfg_we", input("cfg_we", 1));
        u_rx.set("cfg_addr", input("cfg_addr", rss_addr_bits));
        u_rx.set("cfg_wdata", input("cfg_wdata", 32));
        u_rx.unused("stat_drop_bad"); // counted by reason in stat_rx_*
        for n in RX_STATS {
            output(&format!("stat_rx_{n}"), u_rx.get(&format!("stat_rx_{n}")));
        }

        // MAC side: the loopback switch between the TX wire `t` and the RX wire `r`.
        let t = Stream(u_tx.bundle_out("m_axis", &spec));
        let mac_tx = stream_out("m_axis_mac_tx", &scfg);
        let mac_rx = stream_in("s_axis_mac_rx", &scfg);
        let want = input("cfg_loopback", 1);
        let lb = reg_init(1, 0u32).named("loopback");
        output("loopback_active", lb);
        let pending = (want ^ lb).named("mode_change_pending");
        let t_in_frame = reg_init(1, 0u32).named("tx_in_frame");
        let r_in_frame = reg_init(1, 0u32).named("rx_in_frame");
        // A first beat offered on m_axis_mac_tx and not yet taken stays offered (rule 1).
        let mac_tx_stalled = reg_init(1, 0u32).named("mac_tx_stalled");
        let go_t = (!pending | t_in_frame | mac_tx_stalled).named("tx_may_move");
        let go_r = (!pending | r_in_frame).named("rx_may_move");
        lb.set_if(pending & !t_in_frame & !r_in_frame & !mac_tx_stalled, want);

        let r_ready = u_rx.get("s_axis_tready");
        let r_valid =
            mux(lb, t.valid() & go_t & go_r, mac_rx.valid() & go_r).named("rx_wire_valid");
        for ((name, own), (_, looped)) in mac_rx.payload().into_iter().zip(t.payload()) {
            u_rx.set(&format!("s_axis_{name}"), mux(lb, looped, own));
        }
        u_rx.set("s_axis_tvalid", r_valid);
        mac_rx.ready().set(!lb & go_r & r_ready);

        let mac_tx_valid = (!lb & t.valid() & go_t).named("mac_tx_valid");
        for ((_, dst), (_, src)) in mac_tx.payload().into_iter().zip(t.payload()) {
            dst.set(src);
        }
        mac_tx.valid().set(mac_tx_valid);
        t.ready()
            .set(mux(lb, r_ready & go_t & go_r, mac_tx.ready() & go_t));
        mac_tx_stalled.set(mac_tx_valid & !mac_tx.ready());

        let t_beat = (t.valid() & t.ready()).named("tx_wire_beat");
        let r_beat = (r_valid & r_ready).named("rx_wire_beat");
        t_in_frame.set_if(t_beat, !t.last());
        r_in_frame.set_if(r_beat, !mux(lb, t.last(), mac_rx.last()));

        let u_tx_stats = instance(&tx_stats, "u_tx_stats");
        u_tx_stats.set("inc_frames", t_beat & t.last());
        output("stat_tx_frames", u_tx_stats.get("stat_frames"));
    })
}
