"""cocotb tests of nicgen's generated RX path (`eth_rx_d<W>`) on Icarus Verilog.

Frames are built with scapy, driven into `s_axis` (wire frames with their FCS) by cocotbext-axi's
AxiStreamSource, and taken from `m_axis` (delivered frames) and `m_axis_meta` (one record per
input frame) by AxiStreamSinks that pause at random, so the path sees backpressure on both
outputs. Every expectation is computed here, in Python, from the frame's bytes: nothing comes
from nicgen's Rust golden model.

What is checked:
- good TCP and UDP frames over IPv4 and IPv6 come out byte for byte as sent, without the FCS;
  their record reports L3/L4 type, good checksums, the checksum-complete sum and the RSS type and
  Toeplitz hash (Microsoft key, the reset value of the key registers);
- a frame with a bad FCS is dropped: its record says `drop` and `fcs_bad`, and nothing of it
  appears on `m_axis`;
- a VLAN-tagged frame comes out without its tag, the record carries `vlan` and the tag's TCI;
- IPv4/TCP checksum verdicts: a good frame, a bad TCP checksum, a bad IPv4 header checksum;
- the `stat_rx_*` counters after each test.

Run through `run.py` (see README.md). `NICGEN_COCOTB_FRAMES` sets the number of random frames of
the first test (default 32); `COCOTB_RANDOM_SEED` fixes the random choices.
"""

import logging
import os
import random
import zlib

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.layers.inet import IP, TCP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import Dot1Q, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

# The record on m_axis_meta (`RxMeta` in hdl/src/eth/eth_rx.rs), least significant field first;
# the queue number takes the bits that remain (its width depends on the preset's queue count).
META_FIELDS = [
    ("drop", 1),
    ("runt", 1),
    ("oversize", 1),
    ("fcs_bad", 1),
    ("mac_control", 1),
    ("vlan", 1),
    ("vlan_tci", 16),  # the stripped tag's TCI; not meaningful when vlan is 0
    ("l3", 2),  # 0 none, 1 IPv4, 2 IPv6
    ("l4", 2),  # 0 none, 1 TCP, 2 UDP
    ("l3_ok", 1),
    ("l4_ok", 1),
    ("csum", 16),  # ones'-complement sum (not complemented) of the IP datagram
    ("malformed", 4),
    ("rss_type", 3),
    ("rss_hash", 32),
]
L3_IPV4, L3_IPV6 = 1, 2
L4_TCP, L4_UDP = 1, 2
# rss_type codes (hdl/src/rss/rss_toeplitz.rs); all types are enabled at reset.
RSS_TYPE = {(L3_IPV4, L4_TCP): 2, (L3_IPV4, L4_UDP): 3, (L3_IPV6, L4_TCP): 5, (L3_IPV6, L4_UDP): 6}

# Microsoft's RSS verification key, the reset value of the RX path's key registers.
MS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa"
)

CLOCK_NS = 6.4  # 156.25 MHz, the nic64 clock; any period works in simulation


def toeplitz(key: bytes, data: bytes) -> int:
    """The Toeplitz hash of `data`: for every set input bit i, XOR in key bits i..i+31."""
    k, kbits, h = int.from_bytes(key, "big"), len(key) * 8, 0
    for i in range(len(data) * 8):
        if data[i // 8] & (0x80 >> (i % 8)):
            h ^= (k >> (kbits - 32 - i)) & 0xFFFFFFFF
    return h


# Microsoft's verification vector: 66.9.149.187:2794 -> 161.142.100.80:1766, TCP/IPv4.
assert (
    toeplitz(MS_KEY, bytes([66, 9, 149, 187, 161, 142, 100, 80]) + (2794).to_bytes(2, "big")
             + (1766).to_bytes(2, "big")) == 0x51CCC178
)


def ones_sum(data: bytes) -> int:
    """Ones'-complement 16-bit sum, not complemented (odd length: last byte is a high byte)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def with_fcs(frame: bytes, bad: bool = False) -> bytes:
    """The frame as on the wire: the Ethernet FCS (CRC-32, least significant byte first)."""
    fcs = zlib.crc32(frame) ^ (1 if bad else 0)
    return frame + fcs.to_bytes(4, "little")


def pad(frame: bytes) -> bytes:
    """Pad to the 60-byte Ethernet minimum (without FCS), as a MAC does."""
    return frame + bytes(max(0, 60 - len(frame)))


def flow_frame(rng: random.Random, l3: int, l4: int, payload_len: int, tag=None):
    """A TCP or UDP frame over IPv4 or IPv6 with correct checksums (scapy fills them in).

    Returns (frame bytes without FCS, the expected record fields of a delivered frame)."""
    mac = lambda: bytes([rng.randrange(256) & 0xFE] + [rng.randrange(256) for _ in range(5)])
    eth = Ether(src=mac(), dst=mac())
    if l3 == L3_IPV4:
        src, dst = (bytes(rng.randrange(1, 255) for _ in range(4)) for _ in range(2))
        ip = IP(src=".".join(map(str, src)), dst=".".join(map(str, dst)),
                id=rng.randrange(65536), ttl=64)
    else:
        src, dst = (bytes([0x20, 0x01]) + rng.randbytes(14) for _ in range(2))
        ip = IPv6(src=_v6(src), dst=_v6(dst), hlim=64)
    sport, dport = rng.randrange(1024, 65536), rng.randrange(1, 65536)
    l4hdr = (TCP(sport=sport, dport=dport, seq=rng.randrange(2**32), flags="PA")
             if l4 == L4_TCP else UDP(sport=sport, dport=dport))
    pkt = ip / l4hdr / Raw(rng.randbytes(payload_len))
    if tag is not None:
        pkt = Dot1Q(prio=tag >> 13, dei=(tag >> 12) & 1, vlan=tag & 0xFFF) / pkt
    datagram = bytes(pkt[IP] if l3 == L3_IPV4 else pkt[IPv6])
    frame = pad(bytes(eth / pkt))
    expect = {
        "drop": 0, "vlan": 0 if tag is None else 1,
        "l3": l3, "l4": l4, "l3_ok": 1, "l4_ok": 1, "csum": ones_sum(datagram), "malformed": 0,
        "rss_type": RSS_TYPE[(l3, l4)],
        "rss_hash": toeplitz(MS_KEY, src + dst + sport.to_bytes(2, "big")
                             + dport.to_bytes(2, "big")),
    }
    if tag is not None:
        expect["vlan_tci"] = tag  # only meaningful with vlan=1
    return frame, expect


def _v6(b: bytes) -> str:
    return ":".join(b[i:i + 2].hex() for i in range(0, 16, 2))


def pauses(rng: random.Random, p: float):
    """A cocotbext-axi pause generator: pause (ready or valid low) with probability p."""
    while True:
        yield rng.random() < p


class Tb:
    """The RX path with a clock, an AXI-Stream source on `s_axis` and sinks on `m_axis` and
    `m_axis_meta`, both pausing at random."""

    def __init__(self, dut, rng: random.Random):
        self.dut = dut
        Clock(dut.clk, CLOCK_NS, unit="ns").start()
        dut.cfg_we.value = 0
        dut.cfg_addr.value = 0
        dut.cfg_wdata.value = 0
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        # The record has no tkeep or tlast: one 87..-bit word per transfer, read as one "byte".
        self.meta = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_meta"), dut.clk, dut.rst,
                                  byte_lanes=1)
        self.meta_bits = len(dut.m_axis_meta_tdata)
        for log in (self.source.log, self.sink.log, self.meta.log):
            log.setLevel(logging.WARNING)
        self.source.set_pause_generator(pauses(rng, 0.1))
        self.sink.set_pause_generator(pauses(rng, 0.3))
        self.meta.set_pause_generator(pauses(rng, 0.3))

    async def reset(self):
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 8)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 4)

    async def send(self, wire: bytes):
        await self.source.send(AxiStreamFrame(wire))

    def decode(self, word: int) -> dict:
        rec, pos = {}, 0
        for name, bits in META_FIELDS:
            rec[name] = (word >> pos) & ((1 << bits) - 1)
            pos += bits
        rec["queue"] = word >> pos
        assert pos < self.meta_bits, "m_axis_meta_tdata is narrower than the RxMeta record"
        return rec

    async def record(self) -> dict:
        frame = await with_timeout(self.meta.recv(), 200, "us")
        return self.decode(int(frame.tdata[0]))

    async def delivered(self) -> bytes:
        frame = await with_timeout(self.sink.recv(), 200, "us")
        return bytes(frame.tdata)

    async def assert_idle(self):
        """Nothing more comes out on either output."""
        await ClockCycles(self.dut.clk, 200)
        assert self.sink.empty(), "a frame came out on m_axis that should not have"
        assert self.meta.empty(), "a record came out on m_axis_meta that should not have"

    def stat(self, name: str) -> int:
        return int(getattr(self.dut, f"stat_rx_{name}").value)

    def assert_stats(self, **expect):
        got = {k: self.stat(k) for k in expect}
        assert got == expect, f"stat_rx_* counters: got {got}, expected {expect}"


def rng_for(test: str) -> random.Random:
    return random.Random(f"{cocotb.RANDOM_SEED}-{test}")


def check_record(i: int, rec: dict, expect: dict):
    diff = {k: (rec[k], v) for k, v in expect.items() if rec[k] != v}
    assert not diff, f"frame {i}: record fields differ (got, expected): {diff}; record {rec}"


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def good_tcp_and_udp_frames_come_out_unchanged(dut):
    """Random TCP/UDP frames over IPv4/IPv6: delivered byte for byte without FCS, records exact."""
    rng = rng_for("good")
    tb = Tb(dut, rng)
    await tb.reset()
    n = int(os.environ.get("NICGEN_COCOTB_FRAMES", "32"))
    frames = [flow_frame(rng, rng.choice([L3_IPV4, L3_IPV6]), rng.choice([L4_TCP, L4_UDP]),
                         rng.randrange(0, 600)) for _ in range(n)]
    for frame, _ in frames:
        await tb.send(with_fcs(frame))
    for i, (frame, expect) in enumerate(frames):
        check_record(i, await tb.record(), expect)
        out = await tb.delivered()
        assert out == frame, f"frame {i}: delivered {out.hex()}, sent {frame.hex()}"
    await tb.assert_idle()
    tb.assert_stats(frames_in=n, delivered=n, drop_fcs=0, malformed=0, vlan_stripped=0,
                    l3_csum_bad=0, l4_csum_bad=0)


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def bad_fcs_frame_is_dropped(dut):
    """A frame with a bad FCS between two good ones: dropped, recorded, never on m_axis."""
    rng = rng_for("fcs")
    tb = Tb(dut, rng)
    await tb.reset()
    first, e1 = flow_frame(rng, L3_IPV4, L4_UDP, 100)
    bad, _ = flow_frame(rng, L3_IPV4, L4_TCP, 100)
    last, e3 = flow_frame(rng, L3_IPV6, L4_TCP, 100)
    await tb.send(with_fcs(first))
    await tb.send(with_fcs(bad, bad=True))
    await tb.send(with_fcs(last))
    check_record(0, await tb.record(), e1)
    check_record(1, await tb.record(), {"drop": 1, "fcs_bad": 1, "runt": 0, "oversize": 0,
                                        "mac_control": 0, "vlan": 0})
    check_record(2, await tb.record(), e3)
    assert await tb.delivered() == first, "the frame before the bad one"
    assert await tb.delivered() == last, "the frame after the bad one (the bad one is dropped)"
    await tb.assert_idle()
    tb.assert_stats(frames_in=3, delivered=2, drop_fcs=1)


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def vlan_tag_is_stripped_and_reported(dut):
    """802.1Q-tagged frames: delivered without the tag; the record carries vlan=1 and the TCI."""
    rng = rng_for("vlan")
    tb = Tb(dut, rng)
    await tb.reset()
    frames = []
    for l3, l4 in [(L3_IPV4, L4_TCP), (L3_IPV4, L4_UDP), (L3_IPV6, L4_TCP)]:
        tci = (rng.randrange(8) << 13) | rng.randrange(1, 4095)
        frames.append(flow_frame(rng, l3, l4, rng.randrange(0, 300), tag=tci))
    for frame, _ in frames:
        await tb.send(with_fcs(frame))
    for i, (frame, expect) in enumerate(frames):
        check_record(i, await tb.record(), expect)
        out = await tb.delivered()
        stripped = frame[:12] + frame[16:]
        assert out == stripped, f"frame {i}: delivered {out.hex()}, expected {stripped.hex()}"
    await tb.assert_idle()
    tb.assert_stats(frames_in=3, delivered=3, vlan_stripped=3)


@cocotb.test(timeout_time=50, timeout_unit="ms")
async def ipv4_tcp_checksum_verdicts(dut):
    """IPv4/TCP: good checksums, a bad TCP checksum, a bad IPv4 header checksum. All three are
    delivered unchanged (a checksum verdict is reported, not a reason to drop)."""
    rng = rng_for("csum")
    tb = Tb(dut, rng)
    await tb.reset()
    good, e_good = flow_frame(rng, L3_IPV4, L4_TCP, 64)
    # Break a checksum by flipping a bit in the field itself: the other header stays valid.
    bad_l4, e_l4 = flow_frame(rng, L3_IPV4, L4_TCP, 64)
    bad_l4 = bytearray(bad_l4)
    bad_l4[14 + 20 + 16] ^= 0x01  # TCP checksum (IPv4 header without options: 20 bytes)
    e_l4 = dict(e_l4, l4_ok=0, csum=ones_sum(bytes(bad_l4[14:14 + 20 + 20 + 64])))
    bad_l3, e_l3 = flow_frame(rng, L3_IPV4, L4_TCP, 64)
    bad_l3 = bytearray(bad_l3)
    bad_l3[14 + 10] ^= 0x01  # IPv4 header checksum
    e_l3 = {"drop": 0, "l3": L3_IPV4, "l3_ok": 0,
            "csum": ones_sum(bytes(bad_l3[14:14 + 20 + 20 + 64]))}
    frames = [(bytes(good), e_good), (bytes(bad_l4), e_l4), (bytes(bad_l3), e_l3)]
    for frame, _ in frames:
        await tb.send(with_fcs(frame))
    for i, (frame, expect) in enumerate(frames):
        check_record(i, await tb.record(), expect)
        assert await tb.delivered() == frame, f"frame {i} not delivered unchanged"
    await tb.assert_idle()
    tb.assert_stats(frames_in=3, delivered=3, l3_csum_bad=1, l4_csum_bad=1)
