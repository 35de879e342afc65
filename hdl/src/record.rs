//! Records: named fields packed into one bus, for metadata side streams (`m_axis_meta_tdata`).
//!
//! A [`RecordLayout`] lists fields least-significant first; the same layout packs signals in
//! the hardware ([`RecordLayout::pack`], [`RecordLayout::unpack`]) and decodes sampled values in
//! testbenches and the CLI ([`RecordLayout::decode`]), so the two sides cannot disagree.

use nicgen_edsl::prelude::*;
use std::collections::BTreeMap;

/// Field names and widths, least significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLayout {
    pub name: &'static str,
    pub fields: &'static [(&'static str, u32)],
}

impl RecordLayout {
    /// Total width in bits.
    pub const fn width(&self) -> u32 {
        let mut w = 0;
        let mut i = 0;
        while i < self.fields.len() {
            w += self.fields[i].1;
            i += 1;
        }
        w
    }

    /// Bit offset and width of `field`; panics naming the record when it does not exist (a
    /// programming error caught by the block's first test).
    pub fn field(&self, field: &str) -> (u32, u32) {
        let mut off = 0;
        for (n, w) in self.fields {
            if *n == field {
                return (off, *w);
            }
            off += w;
        }
        panic!("record `{}` has no field `{field}`", self.name)
    }

    /// Pack `values` into one signal, every field not named being zero.
    #[track_caller]
    pub fn pack_some(&self, values: &[(&str, Sig)]) -> Sig {
        for (n, _) in values {
            self.field(n); // an unknown name is a programming error
        }
        let all: Vec<(&str, Sig)> = self
            .fields
            .iter()
            .map(|(n, w)| {
                let v = values.iter().find(|(k, _)| k == n).map(|x| x.1);
                (*n, v.unwrap_or_else(|| lit(*w, 0u32)))
            })
            .collect();
        self.pack(&all)
    }

    /// Pack `values` (every field exactly once, any order) into one signal.
    #[track_caller]
    pub fn pack(&self, values: &[(&str, Sig)]) -> Sig {
        let mut parts = Vec::new();
        for (n, w) in self.fields.iter().rev() {
            let v = values
                .iter()
                .find(|(k, _)| k == n)
                .unwrap_or_else(|| panic!("record `{}`: no value for field `{n}`", self.name))
                .1;
            assert_eq!(
                v.width(),
                *w,
                "record `{}`: field `{n}` is {w} bits, value is {}",
                self.name,
                v.width()
            );
            parts.push(v);
        }
        assert_eq!(
            values.len(),
            self.fields.len(),
            "record `{}`: unknown fields among the values",
            self.name
        );
        cat(&parts)
    }

    /// The field signals of a packed record.
    #[track_caller]
    pub fn unpack(&self, packed: Sig) -> Record {
        let mut fields = Vec::new();
        let mut off = 0;
        for (n, w) in self.fields {
            fields.push((*n, packed.slice(off + w - 1, off)));
            off += w;
        }
        Record {
            layout: *self,
            fields,
        }
    }

    /// Decode a sampled record (as little-endian bytes of the bus) into field values.
    pub fn decode(&self, bytes_le: &[u8]) -> BTreeMap<&'static str, BigUint> {
        let v = BigUint::from_bytes_le(bytes_le);
        let mut out = BTreeMap::new();
        let mut off = 0;
        for (n, w) in self.fields {
            let mask = (BigUint::from(1u8) << *w) - 1u8;
            out.insert(*n, (&v >> off) & mask);
            off += w;
        }
        out
    }

    /// Encode field values (missing fields are zero) into little-endian bytes of the bus.
    pub fn encode(&self, values: &[(&str, u128)]) -> Vec<u8> {
        let mut v = BigUint::from(0u8);
        for (n, val) in values {
            let (off, w) = self.field(n);
            let val = BigUint::from(*val);
            assert!(
                val.bits() <= w as u64,
                "record `{}`: {val} does not fit field `{n}` ({w} bits)",
                self.name
            );
            v |= val << off;
        }
        let mut b = v.to_bytes_le();
        b.resize(self.width().div_ceil(8) as usize, 0);
        b
    }
}

/// The field signals of one record inside a module.
#[derive(Clone, Debug)]
pub struct Record {
    pub layout: RecordLayout,
    pub fields: Vec<(&'static str, Sig)>,
}

impl Record {
    pub fn get(&self, name: &str) -> Sig {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("record `{}` has no field `{name}`", self.layout.name))
            .1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const L: RecordLayout = RecordLayout {
        name: "t",
        fields: &[("a", 3), ("b", 70), ("c", 1)],
    };

    #[test]
    fn encode_decode_round_trip() {
        assert_eq!(L.width(), 74);
        let b = L.encode(&[("a", 5), ("b", 1 << 69), ("c", 1)]);
        let d = L.decode(&b);
        assert_eq!(d["a"], BigUint::from(5u8));
        assert_eq!(d["b"], BigUint::from(1u128 << 69));
        assert_eq!(d["c"], BigUint::from(1u8));
        assert_eq!(L.field("b"), (3, 70));
    }
}
