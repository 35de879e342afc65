//! The register map's entries as the hardware names them: typed constants resolved from
//! [`regmap`](super::regmap) at compile time, so a misspelt name does not compile and the map
//! stays the one source (docs/DESIGN.md, decision 4). The paths are the driver's
//! (`sw-driver/src/regs.rs`, generated from the same map):
//!
//! | kind | hardware | driver |
//! |---|---|---|
//! | register | `regs::dev::HEALTH` ([`RegRef`], for `bar_regs`' ports) | `regs::dev::HEALTH` (its BAR offset) |
//! | descriptor field | `regs::desc::cqe::OWNER` ([`DescRef`], for [`super::desc`]) | `regs::desc::cqe::OWNER` |
//! | numbered constant | `regs::consts::qstate::RDY` (`u64`) | `regs::consts::qstate::RDY` (`u32`) |

pub use super::regmap::{DescRef, RegRef};

/// One module per register block: a [`RegRef`] per register.
macro_rules! block {
    ($(#[$m:meta])* $block:ident { $($reg:ident),+ $(,)? }) => {
        $(#[$m])*
        pub mod $block {
            use super::RegRef;
            $(
                #[doc = concat!("Register `", stringify!($block), ".", stringify!($reg), "`.")]
                pub const $reg: RegRef = RegRef::of(stringify!($block), stringify!($reg));
            )+
        }
    };
}

block!(
    /// Identification.
    id { MAGIC, VERSION, DATA_BITS, CLOCK_KHZ, MTU, QUEUES, LIMITS, CAPS, PRESET_NAME,
         CONFIG_HASH, GIT_HASH, GIT_FLAGS, OVERLAY }
);
block!(
    /// Device control and time.
    dev { CTRL, STATUS, HEALTH, SCRATCH, TIMER }
);
block!(
    /// Counters.
    stats { RX_FRAMES, RX_DELIVERED, RX_DROP_RUNT, RX_DROP_OVERSIZE, RX_DROP_FCS,
            RX_DROP_MAC_CONTROL, RX_MALFORMED, RX_VLAN_STRIPPED, RX_L3_CSUM_BAD, RX_L4_CSUM_BAD,
            TX_FRAMES, RX_NO_WQE, TX_WQES, RX_CQES, DMA_RD_ERR, RX_DECAPPED,
            RX_TUNNEL_MALFORMED, TX_LSO_BAD, TX_ENCAP_DROP }
);
block!(
    /// Memory regions.
    mr { SEL, BASE, LEN, COMMIT }
);
block!(
    /// Queue commands.
    qcmd { IN, EXEC, STATUS, OUT }
);
block!(
    /// RSS configuration.
    rss { KEY, ENABLES, TABLE }
);
block!(
    /// Tunnel de-capsulation.
    tunnel { VXLAN_PORT, CTL, STEER_QUEUE, STEER }
);
block!(
    /// Encapsulation contexts.
    encap { CTX }
);
block!(
    /// Doorbells.
    uar { CQ_DB, EQ_DB_ARM, EQ_DB_NOARM, SQ_DB, SQ_BF }
);

/// Descriptor layouts: per layout its [`Desc`](super::regmap::Desc) (`LAYOUT`) and a
/// [`DescRef`] per field the hardware reads or writes.
pub mod desc {
    /// One module per descriptor layout.
    macro_rules! layout {
        ($(#[$m:meta])* $desc:ident { $($field:ident),+ $(,)? }) => {
            $(#[$m])*
            pub mod $desc {
                use crate::host::regmap::{layout, Desc, DescRef};
                /// The layout.
                pub const LAYOUT: &Desc = layout(stringify!($desc));
                $(
                    #[doc = concat!("Field `", stringify!($desc), ".", stringify!($field), "`.")]
                    pub const $field: DescRef = DescRef::field(stringify!($desc), stringify!($field));
                )+
            }
        };
    }

    layout!(
        /// Send WQE control segment.
        ctrl_seg { OPCODE, WQE_INDEX, OPMOD, DS, QPN, SIGNATURE, FM_CE_SE, IMM }
    );
    layout!(
        /// Ethernet segment.
        eth_seg { SWP_OUTER_L4_OFFSET, SWP_OUTER_L3_OFFSET, SWP_INNER_L4_OFFSET, SWP_INNER_L3_OFFSET,
                  CS_FLAGS, SWP_FLAGS, MSS, INLINE_HDR_SZ, VLAN_CMD, INLINE_HDR_START, VLAN_TCI }
    );
    layout!(
        /// Data segment.
        data_seg { BYTE_COUNT, INLINE, LKEY, ADDR }
    );
    layout!(
        /// Completion queue entry.
        cqe { TUNNELED, DECAPPED, TUNNEL_ID, TUNNEL_KIND, TUNNEL_BAD, WQE_ID, RSS_HASH_RESULT, RSS_HASH_TYPE, CHECK_SUM, L3_HDR, L2_OK, L3_OK, L4_OK, CV,
              IP_FRAG, L3_TYPE, L4_TYPE, VLAN_INFO, BYTE_CNT, TIMESTAMP, VENDOR_ERR_SYND,
              SYNDROME, QPN, S_WQE_OPCODE, WQE_COUNTER, OWNER, FORMAT, OPCODE }
    );
    layout!(
        /// Mini CQE of a compressed session.
        mini_cqe { RX_HASH_RESULT, CHECKSUM, STRIDX, WQE_COUNTER, S_WQE_OPCODE, BYTE_CNT }
    );
    layout!(
        /// Event queue entry.
        eqe { EVENT_TYPE, SUB_TYPE, CQN, OWNER }
    );
    layout!(
        /// Doorbell record.
        dbr { RQ_PC, SQ_PC, CQ_CI, CQ_ARM }
    );
    layout!(
        /// QCMD.IN words of CREATE.
        qcmd_in { RING_LO, RING_HI, LOG_SIZE, LOG_STRIDE, DBR_LO, DBR_HI, LINK, MOD_COUNT,
                  MOD_PERIOD, CQE_COMP, MINI_FORMAT, SESSION }
    );
}

/// Numbered constants: one module per group of `regmap::CONSTS`.
pub mod consts {
    /// One module per constant group.
    macro_rules! group {
        ($(#[$m:meta])* $group:ident { $($name:ident),+ $(,)? }) => {
            $(#[$m])*
            pub mod $group {
                use crate::host::regmap::value;
                $(
                    #[doc = concat!("`", stringify!($group), ".", stringify!($name), "`.")]
                    pub const $name: u64 = value(stringify!($group), stringify!($name));
                )+
            }
        };
    }

    group!(
        /// Queue types.
        qtype { EQ, CQ, SQ, RQ }
    );
    group!(
        /// Queue commands.
        qcmd_op { CREATE, DESTROY, RESET, QUERY }
    );
    group!(
        /// Queue-command status codes.
        qcmd_status { OK, BAD_PARAM, BAD_RES_STATE, BAD_INDEX }
    );
    group!(
        /// Queue states.
        qstate { RST, RDY, ERR }
    );
    group!(
        /// Send WQE opcodes.
        opcode { NOP, SEND, LSO, ENHANCED_MPSW }
    );
    group!(
        /// `ctrl_seg.fm_ce_se` bits.
        fm_ce_se { CQ_UPDATE, SOLICITED }
    );
    group!(
        /// `eth_seg.cs_flags` bits.
        cs_flags { L3_CSUM, L4_CSUM }
    );
    group!(
        /// `eth_seg.swp_flags` bits.
        swp_flags { INNER_L3_IPV6, OUTER_L3_IPV6, OUTER_L4_UDP }
    );
    group!(
        /// CQE opcodes.
        cqe_opcode { REQ, RESP_SEND, REQ_ERR, RESP_ERR, INVALID }
    );
    group!(
        /// CQE formats.
        cqe_format { FULL, COMPRESSED }
    );
    group!(
        /// Mini CQE formats.
        mini_cqe_format { HASH, CSUM }
    );
    group!(
        /// Error CQE syndromes.
        syndrome { LOCAL_LENGTH, LOCAL_QP_OP, LOCAL_PROT, WR_FLUSH, LOCAL_ACCESS }
    );
    group!(
        /// EQE event types.
        event_type { COMPLETION, CQ_ERROR, WQ_CATAS }
    );
    group!(
        /// Sizes and special values.
        misc { WQEBB, CQE_SIZE, INVALID_LKEY, MAX_SEND_DS, MAX_FRAME }
    );
}
