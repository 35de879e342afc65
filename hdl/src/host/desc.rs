//! Descriptors in hardware, from the one map (`regmap::DESCS`): pack named field values into a
//! descriptor's bytes, and pick fields out of fetched descriptor bytes.
//!
//! A descriptor signal holds its bytes in memory order on the bus convention: byte `i` at bits
//! `[8i+7:8i]` (what a DMA beat carries), while each field is big-endian inside its container,
//! as mlx5 lays it out.

use super::regmap::{Desc, DESCS};
use nicgen_edsl::prelude::*;

/// The layout named `name`; panics when the map has none (a programming error caught by the
/// block's first build).
pub fn layout(name: &str) -> &'static Desc {
    DESCS
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("the register map has no descriptor `{name}`"))
}

/// The bytes of descriptor `name` (`8 * bytes` bits, byte 0 in bits 7:0) with `values` in
/// their fields and every other bit zero. Each value must be exactly its field's width.
#[track_caller]
pub fn pack(name: &str, values: &[(&str, Sig)]) -> Sig {
    let d = layout(name);
    // Container value per byte offset, built from its fields.
    let mut bytes: Vec<Option<Sig>> = vec![None; d.bytes as usize];
    let mut containers: Vec<(u32, u32, Sig)> = Vec::new();
    for (fname, v) in values {
        let f = d
            .fields
            .iter()
            .find(|f| f.name == *fname)
            .unwrap_or_else(|| panic!("descriptor `{name}` has no field `{fname}`"));
        assert_eq!(
            v.width(),
            f.bits,
            "descriptor `{name}` field `{fname}` is {} bits",
            f.bits
        );
        let cw = 8 * f.container;
        let placed = if f.bits == cw {
            *v
        } else {
            v.zext(cw).shl(f.lsb)
        };
        match containers.iter_mut().find(|c| c.0 == f.byte) {
            Some(c) => {
                assert_eq!(c.1, f.container, "descriptor `{name}`: containers overlap");
                c.2 = c.2 | placed;
            }
            None => containers.push((f.byte, f.container, placed)),
        }
    }
    for (byte, n, v) in containers {
        for i in 0..n {
            assert!(
                bytes[(byte + i) as usize].is_none(),
                "descriptor `{name}`: two fields given for byte {:#x}; pack one of them",
                byte + i
            );
            // Big-endian: the container's most significant byte first.
            let hi = 8 * (n - i) - 1;
            bytes[(byte + i) as usize] = Some(v.slice(hi, hi - 7));
        }
    }
    let parts: Vec<Sig> = bytes
        .into_iter()
        .rev()
        .map(|b| b.unwrap_or_else(|| lit(8, 0u32)))
        .collect();
    cat(&parts)
}

/// Field `field` of descriptor `name` out of `bytes` (the descriptor's bytes, byte 0 in bits
/// 7:0, at least up to the field's container).
#[track_caller]
pub fn get(name: &str, field: &str, bytes: Sig) -> Sig {
    let d = layout(name);
    let f = d
        .fields
        .iter()
        .find(|f| f.name == field)
        .unwrap_or_else(|| panic!("descriptor `{name}` has no field `{field}`"));
    let parts: Vec<Sig> = (0..f.container)
        .map(|i| {
            let b = f.byte + i;
            bytes.slice(8 * b + 7, 8 * b)
        })
        .collect();
    // parts[0] is the most significant byte: cat puts the first part on top.
    let value = cat(&parts);
    value.slice(f.lsb + f.bits - 1, f.lsb)
}
