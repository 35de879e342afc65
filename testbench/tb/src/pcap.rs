//! Ethernet pcap files in and out: classic libpcap or pcapng in (told apart by the magic
//! number), classic libpcap out (`LINKTYPE_ETHERNET`), and pcapng for two-way captures.
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
//!
//! A capture of a link in both directions is pcapng ([`PcapNgCapture`]): classic pcap has no
//! place for a frame's direction, pcapng's Enhanced Packet Block has (`epb_flags`), and every
//! capture tool reads it. Its timestamps are whatever the writer gives (the simulations give
//! the simulated time), in nanoseconds (`if_tsresol` 9).

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapParser, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::io::Write;
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

/// Reads every frame of an Ethernet pcap or pcapng file.
pub fn read_pcap(path: impl AsRef<Path>) -> Result<Vec<Vec<u8>>, PcapError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|source| PcapError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_pcap(&bytes, &path.display().to_string())
}

/// Parses an Ethernet pcap or pcapng held in memory (told apart by the magic number);
/// `source_name` labels errors.
pub fn parse_pcap(bytes: &[u8], source_name: &str) -> Result<Vec<Vec<u8>>, PcapError> {
    if bytes.len() >= 4 && bytes[..4] == PCAPNG_MAGIC {
        return parse_pcapng(bytes, source_name);
    }
    let name = source_name.to_string();
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
        let (next, raw) = parser
            .next_raw_packet(rest)
            .map_err(|e| parse_error(&name, index, rest.len(), "record", e))?;
        if raw.incl_len < raw.orig_len {
            let message = snap_message(raw.incl_len, raw.orig_len);
            return Err(frame_error(&name, index, message));
        }
        frames.push(raw.data.into_owned());
        rest = next;
    }
    Ok(frames)
}

/// The block type of a pcapng Section Header Block, the first four bytes of the file.
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

fn snap_message(kept: u32, len: u32) -> String {
    format!(
        "the capture kept {kept} of {len} bytes (snap length); recapture with a larger snap length"
    )
}

/// The error for frame `index` of `name`.
fn frame_error(name: &str, index: usize, message: String) -> PcapError {
    PcapError::Frame {
        source_name: name.to_string(),
        index,
        message,
    }
}

/// A parser's error at frame `index`, `left` bytes before the end of the file; a file cut
/// short ends inside a `unit` (a pcap record, a pcapng block).
fn parse_error(
    name: &str,
    index: usize,
    left: usize,
    unit: &str,
    e: pcap_file::PcapError,
) -> PcapError {
    let message = match e {
        pcap_file::PcapError::IncompleteBuffer => {
            format!("file ends inside the {unit} ({left} bytes left)")
        }
        e => e.to_string(),
    };
    frame_error(name, index, message)
}

/// The packets of a pcapng file (Enhanced, Simple and the obsolete Packet blocks), in file
/// order, each from an Ethernet interface and whole; other blocks are skipped.
fn parse_pcapng(bytes: &[u8], source_name: &str) -> Result<Vec<Vec<u8>>, PcapError> {
    use pcap_file::pcapng::{Block, PcapNgParser};
    let name = source_name.to_string();
    let (mut rest, mut parser) = PcapNgParser::new(bytes).map_err(|e| PcapError::NotPcap {
        source_name: name.clone(),
        message: format!("pcapng: {e}"),
    })?;
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let index = frames.len();
        let frame_err = |message: String| frame_error(&name, index, message);
        let (next, block) = parser
            .next_block(rest)
            .map_err(|e| parse_error(&name, index, rest.len(), "block", e))?;
        let (interface, data, orig_len) = match block {
            Block::EnhancedPacket(b) => (b.interface_id, b.data, b.original_len),
            Block::Packet(b) => (u32::from(b.interface_id), b.data, b.original_len),
            // A Simple Packet Block's data runs to the block's end (padding included).
            Block::SimplePacket(b) => {
                let n = (b.original_len as usize).min(b.data.len());
                (0, Cow::Owned(b.data[..n].to_vec()), b.original_len)
            }
            _ => {
                rest = next;
                continue;
            }
        };
        let datalink = parser
            .interfaces()
            .get(interface as usize)
            .map(|i| i.linktype)
            .ok_or_else(|| frame_err(format!("interface {interface} is not described")))?;
        if datalink != DataLink::ETHERNET {
            return Err(PcapError::NotEthernet {
                source_name: name,
                datalink,
            });
        }
        if (data.len() as u64) < u64::from(orig_len) {
            return Err(frame_err(snap_message(data.len() as u32, orig_len)));
        }
        frames.push(data.into_owned());
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

/// Which way a frame crossed the link, from the device's side: pcapng's `epb_flags`
/// direction (bits 0-1: 1 inbound, 2 outbound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Into the device (received from the wire).
    Inbound,
    /// Out of the device (sent on the wire).
    Outbound,
}

impl Direction {
    /// The `epb_flags` bits of this direction.
    pub fn flags(self) -> u32 {
        match self {
            Direction::Inbound => 1,
            Direction::Outbound => 2,
        }
    }
}

/// `epb_flags` bit 24: the frame's CRC (FCS) was wrong.
pub const EPB_CRC_ERROR: u32 = 1 << 24;

/// A pcapng capture of Ethernet frames in both directions of one link, written as it goes:
/// one section, one interface (`if_tsresol` 9: nanoseconds), one Enhanced Packet Block per
/// frame with its direction (and a bad FCS) in `epb_flags`.
pub struct PcapNgCapture<W: Write> {
    w: PcapNgWriter<W>,
    destination: String,
    frames: usize,
}

impl PcapNgCapture<std::io::BufWriter<std::fs::File>> {
    /// Create (or truncate) `path`; `interface` names the link in the capture.
    pub fn create(path: impl AsRef<Path>, interface: &str) -> Result<Self, PcapError> {
        let path = path.as_ref();
        let f = std::fs::File::create(path).map_err(|source| PcapError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        PcapNgCapture::new(
            std::io::BufWriter::new(f),
            interface,
            &path.display().to_string(),
        )
    }
}

impl<W: Write> PcapNgCapture<W> {
    /// Start a capture on `w`; `destination` labels errors.
    pub fn new(w: W, interface: &str, destination: &str) -> Result<Self, PcapError> {
        let err = |message: String| PcapError::Write {
            destination: destination.to_string(),
            index: 0,
            message,
        };
        let section = SectionHeaderBlock {
            options: vec![SectionHeaderOption::UserApplication(Cow::Borrowed(
                "nicgen",
            ))],
            ..SectionHeaderBlock::default()
        };
        let mut w = PcapNgWriter::with_section_header(w, section)
            .map_err(|e| err(format!("section header: {e}")))?;
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Owned(interface.to_string())),
                InterfaceDescriptionOption::IfTsResol(9),
            ],
        })
        .map_err(|e| err(format!("interface description: {e}")))?;
        Ok(PcapNgCapture {
            w,
            destination: destination.to_string(),
            frames: 0,
        })
    }

    /// Append `frame` (Ethernet, without FCS) seen going `dir` at `time`; `crc_error` marks a
    /// frame whose FCS was wrong.
    pub fn write(
        &mut self,
        dir: Direction,
        time: Duration,
        frame: &[u8],
        crc_error: bool,
    ) -> Result<(), PcapError> {
        let index = self.frames;
        let err = |message: String| PcapError::Write {
            destination: self.destination.clone(),
            index,
            message,
        };
        let len = u32::try_from(frame.len()).map_err(|_| err("frame longer than 4 GiB".into()))?;
        let flags = dir.flags() | if crc_error { EPB_CRC_ERROR } else { 0 };
        self.w
            .write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                timestamp: time,
                original_len: len,
                data: Cow::Borrowed(frame),
                options: vec![EnhancedPacketOption::Flags(flags)],
            })
            .map_err(|e| err(e.to_string()))?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Flush and return the writer.
    pub fn finish(self) -> Result<W, PcapError> {
        let destination = self.destination;
        let index = self.frames;
        let mut w = self.w.into_inner();
        w.flush().map_err(|e| PcapError::Write {
            destination,
            index,
            message: format!("flushing: {e}"),
        })?;
        Ok(w)
    }
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
    fn reads_pcapng_as_well() {
        let mut c = PcapNgCapture::new(Vec::new(), "eth0", "mem").unwrap();
        for (i, f) in frames().iter().enumerate() {
            c.write(
                Direction::Inbound,
                Duration::from_micros(i as u64),
                f,
                false,
            )
            .unwrap();
        }
        let bytes = c.finish().unwrap();
        assert_eq!(parse_pcap(&bytes, "x.pcapng").unwrap(), frames());
        let err = parse_pcap(&bytes[..bytes.len() - 10], "cut.pcapng")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cut.pcapng: frame 2: file ends inside the block"),
            "{err}"
        );
        let err = parse_pcap(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0], "x.pcapng")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("x.pcapng: not a pcap file: pcapng"),
            "{err}"
        );
    }

    #[test]
    fn rejects_other_formats() {
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

    #[test]
    fn pcapng_capture_keeps_direction_time_and_crc_flag() {
        use pcap_file::pcapng::{Block, PcapNgParser};
        let mut c = PcapNgCapture::new(Vec::new(), "mac", "mem").unwrap();
        c.write(
            Direction::Outbound,
            Duration::from_nanos(64),
            &frames()[0],
            false,
        )
        .unwrap();
        c.write(
            Direction::Inbound,
            Duration::from_nanos(6400),
            &frames()[1],
            true,
        )
        .unwrap();
        assert_eq!(c.frames(), 2);
        let bytes = c.finish().unwrap();
        assert_eq!(bytes[..4], [0x0a, 0x0d, 0x0d, 0x0a]);
        let (mut rest, mut p) = PcapNgParser::new(&bytes).unwrap();
        let mut got = Vec::new();
        while !rest.is_empty() {
            let (next, block) = p.next_block(rest).unwrap();
            if let Block::EnhancedPacket(e) = block {
                got.push((e.timestamp, e.data.into_owned(), e.options));
            }
            rest = next;
        }
        assert_eq!(
            p.interfaces()[0].options,
            vec![
                InterfaceDescriptionOption::IfName(Cow::Borrowed("mac")),
                InterfaceDescriptionOption::IfTsResol(9)
            ]
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, Duration::from_nanos(64));
        assert_eq!(got[0].1, frames()[0]);
        assert_eq!(got[0].2, vec![EnhancedPacketOption::Flags(2)]);
        assert_eq!(
            got[1].2,
            vec![EnhancedPacketOption::Flags(1 | EPB_CRC_ERROR)]
        );
    }
}
