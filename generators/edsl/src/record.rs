//! Records: named fields packed into one word, declared once with [`record!`](crate::record!).
//!
//! A record is a plain Rust struct generic over its field type, as Amaranth's `lib.data`
//! layouts: `R<Sig>` is the record inside a module (each field a signal, reached by a name the
//! compiler checks), `R<u32>` is its *shape* (each field's width in bits; a width of 0 leaves
//! the field out), and `R<u128>` holds the values a testbench sends or reads back. The shape
//! packs and unpacks the signals ([`Shape::pack`], [`Shape::unpack`]) and encodes and decodes
//! the values ([`Shape::encode`], [`Shape::decode`]), so the hardware and its testbench
//! cannot disagree on a bit position, and no block counts bits by hand.
//!
//! ```
//! use nicgen_edsl::prelude::*;
//! nicgen_edsl::record! {
//!     /// A DMA read request.
//!     pub struct RdReq {
//!         /// Bus address.
//!         addr: 64,
//!         len: 13,
//!         tag: 8,
//!     }
//! }
//! // Field values on the testbench side, packed little-endian as on the bus.
//! let bytes = RdReq::shape().encode(&RdReq { addr: 0x1000, len: 64, tag: 3 });
//! assert_eq!(RdReq::shape().decode(&bytes).tag, 3);
//! assert_eq!(RdReq::WIDTH, 85);
//! let m = Module::build("req_tag", || {
//!     let req = RdReq::unpack(input("req", RdReq::WIDTH));
//!     output("tag", req.tag);
//!     req.addr.unused();
//!     req.len.unused();
//! })
//! .unwrap();
//! # let _ = m;
//! ```
//!
//! A record whose widths depend on parameters names them after its name
//! (`pub struct RxMeta(queue_bits: u32) { queue: queue_bits, ... }`) and gets its shape from
//! `RxMeta::shape(queue_bits)`; one with fixed widths also has `WIDTH`, `unpack` and `pack`
//! without a shape in hand.

use crate::builder::{lit, Sig};
use num_bigint::BigUint;
use num_traits::ToPrimitive;

/// A record's shape: the width of every field (0 = the field is left out). Implemented by
/// [`record!`](crate::record!) for `R<u32>`; everything else is provided.
pub trait Shape: Clone + std::fmt::Debug {
    /// The record over signals (`R<Sig>`).
    type Sigs: Clone + std::fmt::Debug;
    /// The record over values (`R<u128>`), for testbenches.
    type Values: Clone + std::fmt::Debug + Default + PartialEq;
    /// The record's name, for messages.
    const NAME: &'static str;
    /// Field names, least significant first.
    const NAMES: &'static [&'static str];

    /// Width of field `i` (in [`Shape::NAMES`] order).
    fn field_width(&self, i: usize) -> u32;
    /// A record of signals from one signal per field.
    fn sigs_from(f: impl FnMut(usize) -> Sig) -> Self::Sigs;
    /// The signal of field `i`.
    fn sig(s: &Self::Sigs, i: usize) -> Sig;
    /// A record of values from one value per field.
    fn values_from(f: impl FnMut(usize) -> u128) -> Self::Values;
    /// The value of field `i`.
    fn value(v: &Self::Values, i: usize) -> u128;

    /// Total width in bits.
    fn width(&self) -> u32 {
        (0..Self::NAMES.len()).map(|i| self.field_width(i)).sum()
    }

    /// Bit offset of field `i` in the packed word.
    fn offset(&self, i: usize) -> u32 {
        (0..i).map(|j| self.field_width(j)).sum()
    }

    /// `(name, offset, width)` of every field present, least significant first.
    fn layout(&self) -> Vec<(&'static str, u32, u32)> {
        let mut off = 0;
        let mut v = Vec::new();
        for (i, n) in Self::NAMES.iter().enumerate() {
            let w = self.field_width(i);
            if w > 0 {
                v.push((*n, off, w));
            }
            off += w;
        }
        v
    }

    /// The fields of a packed word (a field left out of the shape is a signal that reports an
    /// elaboration error wherever it is used).
    #[track_caller]
    fn unpack(&self, word: Sig) -> Self::Sigs {
        let loc = crate::ir::Loc::caller();
        if word.width() != self.width() {
            crate::builder::report(
                loc,
                format!(
                    "record `{}` is {} bits, the word unpacked is {} bits",
                    Self::NAME,
                    self.width(),
                    word.width()
                ),
            );
        }
        let mut off = 0;
        Self::sigs_from(|i| {
            let w = self.field_width(i);
            let s = if w == 0 {
                Sig::absent(Self::NAME, Self::NAMES[i])
            } else if off + w <= word.width() {
                crate::builder::slice_at(word, off + w - 1, off, loc)
            } else {
                lit(w, 0u32)
            };
            off += w;
            s
        })
    }

    /// The fields packed into one word, the first field in the least significant bits; every
    /// field's width must match the shape.
    #[track_caller]
    fn pack(&self, rec: &Self::Sigs) -> Sig {
        let loc = crate::ir::Loc::caller();
        let mut parts = Vec::new();
        for (i, n) in Self::NAMES.iter().enumerate().rev() {
            let w = self.field_width(i);
            if w == 0 {
                continue;
            }
            let s = Self::sig(rec, i);
            if s.width() != w {
                crate::builder::report(
                    loc,
                    format!(
                        "record `{}`: field `{n}` is {w} bits, the value is {} bits",
                        Self::NAME,
                        s.width()
                    ),
                );
                parts.push(lit(w, 0u32));
            } else {
                parts.push(s);
            }
        }
        if parts.is_empty() {
            crate::builder::report(loc, format!("record `{}` has no field", Self::NAME));
            return lit(1, 0u32);
        }
        crate::builder::cat_at(&parts, loc)
    }

    /// Every field zero (start of a record built field by field with `..shape.zeros()`).
    #[track_caller]
    fn zeros(&self) -> Self::Sigs {
        Self::sigs_from(|i| {
            let w = self.field_width(i);
            if w == 0 {
                Sig::absent(Self::NAME, Self::NAMES[i])
            } else {
                lit(w, 0u32)
            }
        })
    }

    /// Values from a sampled word (little-endian bytes of the bus); fields left out read 0.
    /// Panics naming the field when one is wider than 128 bits (use [`Shape::decode_big`]).
    fn decode(&self, bytes_le: &[u8]) -> Self::Values {
        let v = BigUint::from_bytes_le(bytes_le);
        let mut off = 0;
        Self::values_from(|i| {
            let w = self.field_width(i);
            let mask = (BigUint::from(1u8) << w) - 1u8;
            let x = (&v >> off) & mask;
            off += w;
            x.to_u128().unwrap_or_else(|| {
                panic!(
                    "record `{}`: field `{}` ({w} bits) does not fit a u128; use decode_big",
                    Self::NAME,
                    Self::NAMES[i]
                )
            })
        })
    }

    /// Every field's value from a sampled word, as `(name, value)` in field order.
    fn decode_big(&self, bytes_le: &[u8]) -> Vec<(&'static str, BigUint)> {
        let v = BigUint::from_bytes_le(bytes_le);
        self.layout()
            .into_iter()
            .map(|(n, off, w)| (n, (&v >> off) & ((BigUint::from(1u8) << w) - 1u8)))
            .collect()
    }

    /// The packed word of `values` as little-endian bytes of the bus (`ceil(width / 8)` bytes).
    /// Panics naming the field when a value does not fit its width, or when a field left out
    /// of the shape is given a value other than 0.
    fn encode(&self, values: &Self::Values) -> Vec<u8> {
        let mut word = BigUint::from(0u8);
        let mut off = 0;
        for (i, n) in Self::NAMES.iter().enumerate() {
            let w = self.field_width(i);
            let x = Self::value(values, i);
            assert!(
                w >= 128 || x >> w == 0,
                "record `{}`: {x:#x} does not fit field `{n}` ({w} bits)",
                Self::NAME
            );
            word |= BigUint::from(x) << off;
            off += w;
        }
        let mut b = word.to_bytes_le();
        b.resize(self.width().div_ceil(8) as usize, 0);
        b
    }
}

/// Declare a record: a struct generic over its field type, with its shape, packing, and
/// testbench encoding (see [the module doc](mod@crate::record)).
///
/// ```
/// nicgen_edsl::record! {
///     /// What the receive engine learns about a frame.
///     pub struct Meta(queue_bits: u32) {
///         /// The frame is dropped.
///         drop: 1,
///         queue: queue_bits,
///     }
/// }
/// use nicgen_edsl::record::Shape;
/// assert_eq!(Meta::shape(3).width(), 4);
/// ```
#[macro_export]
macro_rules! record {
    // Widths that depend on parameters: `shape(params)`.
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident ( $($p:ident : $pt:ty),+ $(,)? ) {
            $( $(#[$fmeta:meta])* $f:ident : $w:expr ),+ $(,)?
        }
    ) => {
        $crate::record!(@struct $(#[$meta])* $vis $name { $( $(#[$fmeta])* $f ),+ });
        impl $name<$crate::Sig> {
            /// The record's shape (every field's width) for these parameters.
            #[allow(clippy::too_many_arguments)]
            pub fn shape($($p: $pt),+) -> $name<u32> {
                $name { $( $f: $w ),+ }
            }
        }
    };
    // Fixed widths: `shape()`, `WIDTH`, `unpack`, `pack`.
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $f:ident : $w:expr ),+ $(,)?
        }
    ) => {
        $crate::record!(@struct $(#[$meta])* $vis $name { $( $(#[$fmeta])* $f ),+ });
        impl $name<$crate::Sig> {
            /// Total width in bits.
            pub const WIDTH: u32 = 0 $( + $w )+;
            /// The record's shape (every field's width).
            pub fn shape() -> $name<u32> {
                $name { $( $f: $w ),+ }
            }
            /// The fields of a packed word.
            #[track_caller]
            pub fn unpack(word: $crate::Sig) -> Self {
                <$name<u32> as $crate::record::Shape>::unpack(&Self::shape(), word)
            }
            /// The fields packed into one word, the first in the least significant bits.
            #[track_caller]
            pub fn pack(&self) -> $crate::Sig {
                <$name<u32> as $crate::record::Shape>::pack(&Self::shape(), self)
            }
            /// Every field zero.
            #[track_caller]
            pub fn zeros() -> Self {
                <$name<u32> as $crate::record::Shape>::zeros(&Self::shape())
            }
        }
    };
    (@struct $(#[$meta:meta])* $vis:vis $name:ident { $( $(#[$fmeta:meta])* $f:ident ),+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        $vis struct $name<T = $crate::Sig> {
            $( $(#[$fmeta])* pub $f: T, )+
        }
        impl $crate::record::Shape for $name<u32> {
            type Sigs = $name<$crate::Sig>;
            type Values = $name<u128>;
            const NAME: &'static str = stringify!($name);
            const NAMES: &'static [&'static str] = &[ $( stringify!($f) ),+ ];
            fn field_width(&self, i: usize) -> u32 {
                [ $( self.$f ),+ ][i]
            }
            fn sigs_from(mut f: impl FnMut(usize) -> $crate::Sig) -> Self::Sigs {
                let mut i = 0;
                $name { $( $f: { let s = f(i); i += 1; let _ = i; s } ),+ }
            }
            fn sig(s: &Self::Sigs, i: usize) -> $crate::Sig {
                [ $( s.$f ),+ ][i]
            }
            fn values_from(mut f: impl FnMut(usize) -> u128) -> Self::Values {
                let mut i = 0;
                $name { $( $f: { let v = f(i); i += 1; let _ = i; v } ),+ }
            }
            fn value(v: &Self::Values, i: usize) -> u128 {
                [ $( v.$f ),+ ][i]
            }
        }
        impl $crate::io::Interface for $name<$crate::Sig> {
            /// Every field, forward: a record of ports connects field by field.
            fn signals(&self) -> Vec<($crate::Sig, $crate::builder::Flow)> {
                vec![ $( (self.$f, $crate::builder::Flow::Forward) ),+ ]
            }
        }
        impl<T> $name<T> {
            /// The same record with every field mapped.
            pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> $name<U> {
                $name { $( $f: f(self.$f) ),+ }
            }
        }
    };
}

crate::record! {
    /// An opaque word of `width` bits: the record of a stream whose payload has no fields of
    /// interest to the block that carries it (a FIFO, a register slice).
    pub struct Word(width: u32) {
        word: width,
    }
}
