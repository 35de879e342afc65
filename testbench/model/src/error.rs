//! The error type shared by every format in the crate.

use std::fmt;

/// Why a byte buffer could not be viewed or parsed as a given format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before the format says it should.
    Truncated {
        /// Which format was being read ("ipv4 header", "udp length", ...).
        what: &'static str,
        /// Bytes the format needs.
        needed: usize,
        /// Bytes the buffer has.
        got: usize,
    },
    /// A length or offset field contradicts the format (an IPv4 IHL below 5, a UDP length
    /// below 8, ...).
    Malformed(&'static str),
    /// The bytes are well formed but describe something this model does not handle (an IP
    /// version field that is not 4 in an IPv4 header, ...).
    Unsupported(&'static str),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    /// Returns `Ok(())` when `got >= needed`, otherwise a [`Error::Truncated`].
    pub(crate) fn check_len(what: &'static str, needed: usize, got: usize) -> Result<()> {
        if got < needed {
            Err(Error::Truncated { what, needed, got })
        } else {
            Ok(())
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { what, needed, got } => {
                write!(
                    f,
                    "truncated {what}: needs {needed} bytes, buffer has {got}"
                )
            }
            Error::Malformed(why) => write!(f, "malformed packet: {why}"),
            Error::Unsupported(why) => write!(f, "unsupported packet: {why}"),
        }
    }
}

impl std::error::Error for Error {}
