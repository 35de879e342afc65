//! Ethernet pcap files in and out (classic libpcap format, `LINKTYPE_ETHERNET`).
//!
//! # Why
//! Frames cross the boundary between this project and real tools as pcap: vectors built with
//! scapy or captured with tcpdump go in, and what the simulated NIC emitted comes out for
//! tshark/Wireshark to decode (DESIGN.md, "Real peers"). Reading is strict: a file that is not
//! Ethernet pcap, or a record that is damaged or was cut short by the capture's snap length,
//! is an error naming the frame index, because a silently shortened test vector would make a
//! test pass on the wrong input.
//!
//! Written files use microsecond timestamps, frame `i` at `i` microseconds (deterministic
//! output, so committed captures do not churn).

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapParser, PcapWriter};
use pcap_file::DataLink;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Errors reading or writing pcap.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file header is not a classic pcap header.
    #[error("{source_name}: not a pcap file: {message}")]
    NotPcap {
        /// File name or `<memory>`.
        source_name: String,
        /// Details.
        message: String,
    },
    /// The link type is not Ethernet.
    #[error("{source_name}: link type {datalink:?}, expected ETHERNET (1)")]
    NotEthernet {
        /// File name or `<memory>`.
        source_name: String,
        /// The file's link type.
        datalink: DataLink,
    },
    /// A record is unreadable.
    #[error("{source_name}: frame {index}: {message}")]
    Frame {
        /// File name or `<memory>`.
        source_name: String,
        /// 0-based frame index.
        index: usize,
        /// Details.
        message: String,
    },
    /// Writing failed.
    #[error("{destination}: cannot write frame {index}: {message}")]
    Write {
        /// File name or `<memory>`.
        destination: String,
        /// 0-based frame index (or the header, as index 0 with a message saying so).
        index: usize,
        /// Details.
        message: String,
    },
}

/// Reads every frame of an Ethernet pcap file.
pub fn read_pcap(path: impl AsRef<Path>) -> Result<Vec<Vec<u8>>, PcapError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| PcapError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_pcap(&bytes, &path.display().to_string())
}

/// Parses an Ethernet pcap held in memory; `source_name` labels errors.
pub fn parse_pcap(bytes: &[u8], source_name: &str) -> Result<Vec<Vec<u8>>, PcapError> {
    let name = source_name.to_string();
    if bytes.len() >= 4 && bytes[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        return Err(PcapError::NotPcap {
            source_name: name,
            message: "this is pcapng; convert it with `editcap -F pcap in.pcapng out.pcap`".into(),
        });
    }
    let (mut rest, parser) = PcapParser::new(bytes).map_err(|e| PcapError::NotPcap {
        source_name: name.clone(),
        message: e.to_string(),
    })?;
    let header = parser.header();
    if header.datalink != DataLink::ETHERNET {
        return Err(PcapError::NotEthernet {
            source_name: name,
            datalink: header.datalink,
        });
    }
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let index = frames.len();
        let frame_err = |message: String| PcapError::Frame {
            source_name: name.clone(),
            index,
            message,
        };
        let (next, raw) = parser.next_raw_packet(rest).map_err(|e| match e {
            pcap_file::PcapError::IncompleteBuffer => frame_err(format!(
                "file ends inside the record ({} bytes left)",
                rest.len()
            )),
            e => frame_err(e.to_string()),
        })?;
        if raw.incl_len < raw.orig_len {
            return Err(frame_err(format!(
                "the capture kept {} of {} bytes (snap length); recapture with a larger snap length",
                raw.incl_len, raw.orig_len
            )));
        }
        frames.push(raw.data.into_owned());
        rest = next;
    }
    Ok(frames)
}

/// Writes frames to an Ethernet pcap file (frame `i` at `i` µs).
pub fn write_pcap<F: AsRef<[u8]>>(path: impl AsRef<Path>, frames: &[F]) -> Result<(), PcapError> {
    let path = path.as_ref();
    let bytes = pcap_bytes(frames, &path.display().to_string())?;
    std::fs::write(path, bytes).map_err(|source| PcapError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The bytes of an Ethernet pcap file holding `frames`; `destination` labels errors.
pub fn pcap_bytes<F: AsRef<[u8]>>(frames: &[F], destination: &str) -> Result<Vec<u8>, PcapError> {
    let write_err = |index: usize, message: String| PcapError::Write {
        destination: destination.to_string(),
        index,
        message,
    };
    let snaplen = frames
        .iter()
        .map(|f| f.as_ref().len())
        .max()
        .unwrap_or(0)
        .max(65535);
    let snaplen =
        u32::try_from(snaplen).map_err(|_| write_err(0, "frame longer than 4 GiB".into()))?;
    let header = PcapHeader {
        snaplen,
        datalink: DataLink::ETHERNET,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header)
        .map_err(|e| write_err(0, format!("header: {e}")))?;
    for (i, f) in frames.iter().enumerate() {
        let data = f.as_ref();
        let len = u32::try_from(data.len())
            .map_err(|_| write_err(i, "frame longer than 4 GiB".into()))?;
        let packet = PcapPacket::new(Duration::from_micros(i as u64), len, data);
        w.write_packet(&packet)
            .map_err(|e| write_err(i, e.to_string()))?;
    }
    Ok(w.into_writer())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> Vec<Vec<u8>> {
        vec![
            (0..60).collect(),
            vec![0xff; 1514],
            (0..=255).cycle().take(9000).collect(),
        ]
    }

    #[test]
    fn round_trip_in_memory_and_on_disk() {
        let bytes = pcap_bytes(&frames(), "mem").unwrap();
        // Classic pcap magic, native endian, link type 1.
        assert!(bytes[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || bytes[..4] == [0xa1, 0xb2, 0xc3, 0xd4]);
        assert_eq!(parse_pcap(&bytes, "mem").unwrap(), frames());
        let path = std::env::temp_dir().join(format!("nicgen-tb-{}.pcap", std::process::id()));
        write_pcap(&path, &frames()).unwrap();
        assert_eq!(read_pcap(&path).unwrap(), frames());
        std::fs::remove_file(&path).unwrap();
        assert!(
            parse_pcap(&pcap_bytes::<Vec<u8>>(&[], "mem").unwrap(), "mem")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn truncated_file_names_the_frame() {
        let bytes = pcap_bytes(&frames(), "mem").unwrap();
        let cut = &bytes[..bytes.len() - 10];
        let err = parse_pcap(cut, "cut.pcap").unwrap_err().to_string();
        assert!(
            err.starts_with("cut.pcap: frame 2: file ends inside the record"),
            "{err}"
        );
    }

    #[test]
    fn snap_length_truncation_is_an_error() {
        let mut bytes = pcap_bytes(&frames()[..1], "mem").unwrap();
        // Record header after the 24-byte file header: ts_sec, ts_usec, incl_len, orig_len.
        let orig = 24 + 12;
        let le = bytes[0] == 0xd4;
        let v: u32 = 100;
        bytes[orig..orig + 4].copy_from_slice(&if le { v.to_le_bytes() } else { v.to_be_bytes() });
        let err = parse_pcap(&bytes, "snap.pcap").unwrap_err().to_string();
        assert!(
            err.contains("frame 0: the capture kept 60 of 100 bytes"),
            "{err}"
        );
    }

    #[test]
    fn rejects_other_formats() {
        let err = parse_pcap(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0], "x.pcapng")
            .unwrap_err()
            .to_string();
        assert!(err.contains("pcapng"), "{err}");
        let err = parse_pcap(b"hello world, this is not a pcap file", "t.txt")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t.txt: not a pcap file"), "{err}");
        let header = PcapHeader {
            datalink: DataLink::RAW,
            ..PcapHeader::default()
        };
        let raw = PcapWriter::with_header(Vec::new(), header)
            .unwrap()
            .into_writer();
        let err = parse_pcap(&raw, "raw.pcap").unwrap_err().to_string();
        assert!(err.contains("expected ETHERNET"), "{err}");
        let err = read_pcap("/nonexistent/x.pcap").unwrap_err().to_string();
        assert!(err.starts_with("/nonexistent/x.pcap: "), "{err}");
    }
}
