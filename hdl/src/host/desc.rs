//! Descriptors in hardware, from the one map (`regmap::DESCS`): pack field values into a
//! descriptor's bytes, and pick fields out of fetched descriptor bytes. Fields are named by
//! the typed handles of [`super::regs::desc`] (`regs::desc::cqe::OWNER`), resolved from the
//! map at compile time; the checks the map cannot make (a value's width, two values for one
//! byte, a field of another layout) are elaboration errors at the caller's line.
//!
//! A descriptor signal holds its bytes in memory order on the bus convention: byte `i` at bits
//! `[8i+7:8i]` (what a DMA beat carries), while each field is big-endian inside its container,
//! as mlx5 lays it out.
//!
//! Why handles and not a `record!` per descriptor: mlx5 layouts overlap on purpose (`eth_seg`'s
//! `inline_hdr_sz` and `vlan_cmd` are the same bytes read two ways; a CQE's `timestamp` holds
//! the error syndromes on an error CQE; `dbr` is one layout per queue type), and their fields
//! are big-endian containers, not a packed little-endian word; a handle per field keeps the
//! map the only description and gives the hardware names the compiler checks.

use super::regmap::{Desc, DescRef};
use nicgen_edsl::prelude::*;
use nicgen_edsl::{report, Loc};

/// The bytes of descriptor `layout` (`8 * bytes` bits, byte 0 in bits 7:0) with `values` in
/// their fields and every other bit zero. Each value must be exactly its field's width, every
/// field of `layout`, and no two values may share a byte unless they share a container.
#[track_caller]
pub fn pack(layout: &'static Desc, values: &[(DescRef, Sig)]) -> Sig {
    let loc = Loc::caller();
    let name = layout.name;
    let mut bytes: Vec<Option<Sig>> = vec![None; layout.bytes as usize];
    // Container value per byte offset, built from its fields.
    let mut containers: Vec<(u32, u32, Sig)> = Vec::new();
    for (f, v) in values {
        let (fname, f) = (f.field.name, f.field);
        if !layout.fields.iter().any(|x| x == f) {
            report(loc, format!("descriptor `{name}` has no field `{fname}`"));
            continue;
        }
        if v.width() != f.bits {
            report(
                loc,
                format!(
                    "descriptor `{name}` field `{fname}` is {} bits, the value is {}",
                    f.bits,
                    v.width()
                ),
            );
            continue;
        }
        let cw = 8 * f.container;
        let placed = if f.bits == cw {
            *v
        } else {
            v.zext(cw).shl(f.lsb)
        };
        match containers.iter_mut().find(|c| c.0 == f.byte) {
            Some(c) if c.1 != f.container => {
                report(loc, format!("descriptor `{name}`: containers overlap"))
            }
            Some(c) => c.2 = c.2 | placed,
            None => containers.push((f.byte, f.container, placed)),
        }
    }
    for (byte, n, v) in containers {
        for i in 0..n {
            let slot = &mut bytes[(byte + i) as usize];
            if slot.is_some() {
                report(
                    loc,
                    format!(
                        "descriptor `{name}`: two fields given for byte {:#x}; pack one of them",
                        byte + i
                    ),
                );
            }
            // Big-endian: the container's most significant byte first.
            let hi = 8 * (n - i) - 1;
            *slot = Some(v.slice(hi, hi - 7));
        }
    }
    let parts: Vec<Sig> = bytes
        .into_iter()
        .rev()
        .map(|b| b.unwrap_or_else(|| lit(8, 0u32)))
        .collect();
    cat(&parts)
}

/// Field `field` out of `bytes` (the descriptor's bytes, byte 0 in bits 7:0, at least up to
/// the field's container).
#[track_caller]
pub fn get(field: DescRef, bytes: Sig) -> Sig {
    let f = field.field;
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
