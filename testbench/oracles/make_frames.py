#!/usr/bin/env python3
"""Independent oracle: Ethernet frames built with scapy, and what an RX offload must say about them.

Usage: python3 make_frames.py OUT.pcap OUT.jsonl [--seed N]

Writes a classic Ethernet pcap (no FCS; frame i at i microseconds) of a broad, deterministic set of
frames, and a JSON-lines sidecar with one object per frame, in frame order:

  index       0-based frame index in the pcap
  kind        short label of what the frame was built as (debugging only; not an oracle)
  len         frame length in bytes (no FCS)
  l3          null | "ipv4" | "ipv6": the last ethertype after at most two 802.1Q/802.1ad tags
  l4          null | "tcp" | "udp": the upper-layer protocol of an IP datagram that is not a
              fragment (IPv4 MF or offset != 0, or an IPv6 fragment header that is not an
              RFC 6946 atomic fragment); ICMP, ICMPv6, other protocols and fragments are null
  fragment    true when the datagram is an IP fragment (then l4 and l4_csum_ok are null)
  vlan        null | {"vid", "pcp"} of the outermost tag (0x8100 or 0x88a8)
  l3_csum_ok  IPv4: the header checksum is valid; IPv6: true; non-IP: null
  l4_csum_ok  TCP/UDP checksum valid with the pseudo-header; UDP over IPv4 with checksum 0: true
              (not checked, as mlx5 reports l4_ok); UDP over IPv6 with checksum 0: false;
              fragments, non-TCP/UDP and non-IP: null
  csum        "0x%04x": the ones'-complement 16-bit sum, NOT complemented, of the bytes from the IP
              header start to the end of the IP datagram per its length field (IPv4 total length,
              IPv6 40 + payload length), clipped to the frame; for non-IP frames of the bytes after
              the L2 header(s) to the end of the frame. Odd length: the last byte is the high byte
              of a word. A non-empty range never sums to 0x0000 unless it is all zeros.
  malformed   null, or a string saying why the frame is truncated/invalid (the string is ours;
              only null vs non-null is an oracle). For malformed frames l3_csum_ok and l4_csum_ok
              are null (no verdict: an offload must not report them as verified); l3/l4 say what the
              headers claim, csum is still exact.
  rss_ms      null, or for the Microsoft RSS verification flows (wire-formats.md §3.6)
              {"tcp": "0x%08x", "ip": "0x%08x"}: Toeplitz hash with the Microsoft key over
              src addr, dst addr, src port, dst port (4-tuple) and over the addresses only.

Independence: checksum validity comes from scapy (scapy.utils.checksum over the IPv4 header,
scapy's in4_chksum/in6_chksum with the pseudo-header over the dissected L4 bytes), and the sums from
scapy.utils.checksum; frames are dissected with scapy. Nothing here uses the Rust model. The script
also checks every verdict against what it meant to build (a deliberately wrong checksum must come out
false, a filled one true), and the Toeplitz values against the table in wire-formats.md §3.6; any
disagreement aborts with an error.
"""

import argparse
import ipaddress
import json
import logging
import random
import struct
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

try:
    # The layer modules only (scapy.all imports every protocol and takes a second longer).
    from scapy.compat import raw
    from scapy.config import conf
    from scapy.layers.inet import (
        ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_Router_Alert, IPOption_RR, IPOption_Timestamp,
        in4_chksum,
    )
    from scapy.layers.inet6 import (
        ICMPv6EchoRequest, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
        IPv6ExtHdrRouting, PadN, RouterAlert, in6_chksum,
    )
    from scapy.layers.l2 import ARP, LLC, Dot1AD, Dot1Q, Dot3, Ether
    from scapy.packet import Raw
    from scapy.utils import checksum, rdpcap
except ImportError as e:  # the Rust test looks for this line to decide skip vs fail
    sys.stderr.write(f"make_frames.py: scapy is not importable ({e}); pip install scapy\n")
    sys.exit(3)

conf.verb = 0

MIN_FRAME = 60  # Ethernet minimum without FCS
# An Ethernet header with both addresses set: scapy would otherwise resolve the destination with a
# real ARP request on the network.
NOARP = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
JUMBO = 9000

# Microsoft RSS verification key and flows (wire-formats.md §3.6).
MS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
RSS_V4 = [
    ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x323e8fc2, 0x51ccc178),
    ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xd718262a, 0xc626b0ea),
    ("24.19.198.95", 12898, "12.22.207.184", 38024, 0xd2d0a5de, 0x5c2b394a),
    ("38.27.205.30", 48228, "209.142.163.6", 2217, 0x82989176, 0xafc7327f),
    ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x5d1809c5, 0x10e828a2),
]
RSS_V6 = [
    ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x2cc18cd5, 0x40207d3d),
    ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0f0c461c, 0xdde51bbf),
    ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024,
     0x4b61e985, 0x02d1feef),
]

# The drop-eligible bit of a VLAN tag: `dei` in current scapy, `id` in 2.5.0 (Debian 12 python3-scapy).
DEI = "dei" if any(f.name == "dei" for f in Dot1Q.fields_desc) else "id"

# 0, 1 and 2 tags; the outer tag of a double-tagged frame is 802.1ad or 802.1Q.
TAG_CONFIGS = [(), (0x8100,), (0x88A8, 0x8100), (0x8100, 0x8100), (0x88A8,)]


def toeplitz(key, data):
    """Toeplitz hash, written from the definition (bit i of the input set -> XOR key bits i..i+31)."""
    result = 0
    for i in range(len(data) * 8):
        if data[i // 8] & (0x80 >> (i % 8)):
            window = 0
            for j in range(32):
                bit = i + j
                window = (window << 1) | ((key[bit // 8] >> (7 - bit % 8)) & 1)
            result ^= window
    return result


def rss_input(src, dst, sport=None, dport=None):
    data = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
    if sport is not None:
        data += struct.pack("!HH", sport, dport)
    return data


def check_rss_table():
    for src, sport, dst, dport, ip_hash, tcp_hash in RSS_V4 + RSS_V6:
        got_ip = toeplitz(MS_KEY, rss_input(src, dst))
        got_tcp = toeplitz(MS_KEY, rss_input(src, dst, sport, dport))
        if (got_ip, got_tcp) != (ip_hash, tcp_hash):
            raise SystemExit(
                f"make_frames.py: Toeplitz of {src}:{sport} -> {dst}:{dport} gave ip {got_ip:#010x} "
                f"tcp {got_tcp:#010x}, wire-formats.md §3.6 says {ip_hash:#010x} {tcp_hash:#010x}")


def ones_sum(data):
    """The non-complemented ones'-complement sum, from scapy's checksum (which complements it)."""
    return ~checksum(bytes(data)) & 0xFFFF


class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.frames = []  # (kind, bytes, intent)

    # ---- random field values --------------------------------------------------------------
    def mac(self):
        b = bytearray(self.rng.randbytes(6))
        b[0] = (b[0] & 0xFC) | 0x02  # locally administered unicast
        return ":".join(f"{x:02x}" for x in b)

    def ip4(self):
        r = self.rng
        return f"{r.choice([10, 172, 192, 198, 203, 100])}.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}"

    def ip6(self):
        r = self.rng
        groups = [0x2001, 0x0DB8] + [r.randrange(0x10000) for _ in range(6)]
        return ":".join(f"{g:x}" for g in groups)

    def port(self):
        return self.rng.choice([self.rng.randrange(1, 1024), self.rng.randrange(1024, 65536), 0xFFFF])

    def payload(self, n):
        return self.rng.randbytes(max(0, n))

    def tcp(self, **kw):
        r = self.rng
        options = r.choice([
            [],
            [("MSS", r.randrange(536, 9000))],
            [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (r.getrandbits(32), 0)), ("NOP", None),
             ("WScale", r.randrange(15))],
            [("NOP", None), ("NOP", None), ("Timestamp", (r.getrandbits(32), r.getrandbits(32)))],
            [("SAck", (r.getrandbits(32), r.getrandbits(32), r.getrandbits(32), r.getrandbits(32)))],
        ])
        fields = dict(sport=self.port(), dport=self.port(), seq=r.getrandbits(32),
                      ack=r.getrandbits(32), flags=r.choice(["S", "SA", "A", "PA", "FA", "R", "UAP"]),
                      window=r.randrange(65536), options=options)
        fields.update(kw)
        return TCP(**fields)

    def udp(self, **kw):
        fields = dict(sport=self.port(), dport=self.port())
        fields.update(kw)
        return UDP(**fields)

    def ipv4(self, **kw):
        r = self.rng
        fields = dict(src=self.ip4(), dst=self.ip4(), ttl=r.randrange(1, 256), id=r.randrange(65536),
                      tos=r.randrange(256), flags=r.choice(["", "DF"]))
        fields.update(kw)
        return IP(**fields)

    def ipv6(self, **kw):
        r = self.rng
        fields = dict(src=self.ip6(), dst=self.ip6(), hlim=r.randrange(1, 256), tc=r.randrange(256),
                      fl=r.randrange(1 << 20))
        fields.update(kw)
        return IPv6(**fields)

    def size(self):
        """A payload size: empty, small, medium or near the 1500-byte MTU."""
        r = self.rng
        return r.choice([0, r.randrange(1, 32), r.randrange(32, 600), r.randrange(600, 1400)])

    # ---- framing ------------------------------------------------------------------------------
    def l2(self, tags, upper):
        r = self.rng
        frame = Ether(src=self.mac(), dst=r.choice([self.mac(), "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01"]))
        for tpid in tags:
            vid = r.choice([0, 1, 4094, r.randrange(2, 4094), r.randrange(2, 4094)])
            tag_cls = Dot1AD if tpid == 0x88A8 else Dot1Q
            tag = tag_cls(vlan=vid, prio=r.randrange(8))
            setattr(tag, DEI, r.randrange(2))
            frame = frame / tag
        return frame / upper

    def pad(self, data):
        """Ethernet padding to 60 bytes; mostly zeros, sometimes junk (hardware must ignore it)."""
        if len(data) >= MIN_FRAME:
            return data
        n = MIN_FRAME - len(data)
        fill = self.payload(n) if self.rng.random() < 0.3 else bytes(n)
        return data + fill

    def add(self, kind, data, intent):
        if len(data) < MIN_FRAME:
            raise SystemExit(f"make_frames.py: internal: {kind} is {len(data)} bytes, not padded")
        self.frames.append((kind, bytes(data), intent))

    def ethertype(self, ethertype, tags, n):
        """A non-IP frame: `n` random bytes under `ethertype` (scapy would put 0x9000 below Raw)."""
        pkt = self.l2(tags, Raw(self.payload(n)))
        (pkt.getlayer(len(tags)) if tags else pkt).type = ethertype
        data = self.pad(raw(pkt))
        self.add(f"ethertype_{ethertype:04x}/len{len(data)}/tags{len(tags)}", data, intent(None, None))

    # ---- checksum manipulation ----------------------------------------------------------------
    def wrong(self, correct, udp4=False):
        """A checksum value that is wrong for sure: one bit flipped (never the ones'-complement
        twin 0x0000/0xFFFF of the correct value), and never 0 for UDP over IPv4."""
        while True:
            v = correct ^ (1 << self.rng.randrange(16))
            if not (udp4 and v == 0):
                return v

    def build(self, pkt, bad_l3=False, bad_l4=False):
        """Bytes of `pkt` with scapy-filled checksums, optionally with a wrong IPv4 header checksum
        and/or a wrong TCP/UDP checksum (set explicitly, as `chksum`)."""
        pkt = pkt.copy()
        good = Ether(raw(pkt))
        if bad_l3:
            pkt[IP].chksum = self.wrong(good[IP].chksum)
        if bad_l4:
            l4 = TCP if TCP in pkt else UDP
            pkt[l4].chksum = self.wrong(good[l4].chksum, udp4=(l4 is UDP and IP in pkt))
        return raw(pkt)

    def emit(self, kind, tags, upper, intent, variants=("good", "bad_l3", "bad_l4")):
        """Adds the frame in each applicable checksum variant."""
        pkt = self.l2(tags, upper)
        for v in variants:
            bad_l3 = v in ("bad_l3", "bad_both")
            bad_l4 = v in ("bad_l4", "bad_both")
            if bad_l3 and intent["l3"] != "ipv4":
                continue
            if bad_l4 and intent["l4"] is None:
                continue
            want = dict(intent)
            if bad_l3:
                want["l3_ok"] = False
            if bad_l4:
                want["l4_ok"] = False
            data = self.pad(self.build(pkt, bad_l3, bad_l4))
            self.add(f"{kind}{'' if v == 'good' else '/' + v}/tags{len(tags)}", data, want)


def intent(l3, l4, l3_ok=None, l4_ok=None, fragment=False, malformed=None, rss=None):
    return dict(l3=l3, l4=l4, l3_ok=l3_ok, l4_ok=l4_ok, fragment=fragment, malformed=malformed, rss=rss)


def ipv4_options(rng):
    return rng.choice([
        [IPOption_NOP(), IPOption_RR(routers=["192.0.2.1"] * rng.randrange(1, 5))],
        [IPOption_Router_Alert()],
        [IPOption_Timestamp(flg=0, timestamp=rng.getrandbits(32))],
        [IPOption_RR(routers=["10.0.0.%d" % i for i in range(9)])],  # 39 + EOL: IHL 15
    ])


def ipv6_ext_headers(rng, chain):
    """Extension headers in `chain` order; option sizes vary so header lengths vary."""
    layers = []
    for name in chain:
        if name == "hbh":
            opts = [RouterAlert()] if rng.random() < 0.5 else []
            opts.append(PadN(optdata=bytes(rng.randrange(0, 14))))
            layers.append(IPv6ExtHdrHopByHop(options=opts))
        elif name == "dst":
            layers.append(IPv6ExtHdrDestOpt(options=[PadN(optdata=bytes(rng.randrange(0, 30)))]))
        elif name == "rt":
            # segments left 0: the final destination is the IPv6 destination, so every
            # pseudo-header convention (scapy, Wireshark, Linux, the NIC) agrees.
            layers.append(IPv6ExtHdrRouting(type=0, segleft=0, addresses=["2001:db8::%x" % i for i in range(rng.randrange(0, 3))]))
        else:
            raise ValueError(name)
    return layers


def stack(layers, top):
    out = layers[0]
    for layer in layers[1:]:
        out = out / layer
    return out / top if top is not None else out


def generate(seed):
    g = Gen(seed)
    r = g.rng
    check_rss_table()

    # Every well-formed IP kind in each of the five tag configurations, in each checksum variant.
    for tags in TAG_CONFIGS:
        for _ in range(2):
            g.emit("ipv4_tcp", tags, g.ipv4() / g.tcp() / Raw(g.payload(g.size())), intent("ipv4", "tcp", True, True))
            g.emit("ipv4_udp", tags, g.ipv4() / g.udp() / Raw(g.payload(g.size())), intent("ipv4", "udp", True, True))
        g.emit("ipv4_udp_csum0", tags, g.ipv4() / g.udp(chksum=0) / Raw(g.payload(g.size())),
               intent("ipv4", "udp", True, True), variants=("good", "bad_l3"))
        g.emit("ipv4_opts_tcp", tags, g.ipv4(options=ipv4_options(r)) / g.tcp() / Raw(g.payload(g.size())),
               intent("ipv4", "tcp", True, True))
        g.emit("ipv4_opts_udp", tags, g.ipv4(options=ipv4_options(r)) / g.udp() / Raw(g.payload(g.size())),
               intent("ipv4", "udp", True, True))
        g.emit("ipv4_icmp", tags, g.ipv4() / ICMP(id=r.randrange(65536), seq=r.randrange(65536)) / Raw(g.payload(g.size())),
               intent("ipv4", None, True, None))
        g.emit("ipv4_proto253", tags, g.ipv4(proto=253) / Raw(g.payload(g.size())), intent("ipv4", None, True, None))
        # Fragments: the first carries the L4 header but only part of the datagram; later ones none.
        g.emit("ipv4_frag_first_tcp", tags, g.ipv4(flags="MF", frag=0) / g.tcp() / Raw(g.payload(r.randrange(8, 1200))),
               intent("ipv4", None, True, None, fragment=True))
        g.emit("ipv4_frag_first_udp", tags, g.ipv4(flags="MF", frag=0) / g.udp(len=r.randrange(1300, 8000)) / Raw(g.payload(r.randrange(8, 1200))),
               intent("ipv4", None, True, None, fragment=True))
        g.emit("ipv4_frag_middle", tags, g.ipv4(flags="MF", frag=r.randrange(1, 1000), proto=6) / Raw(g.payload(r.randrange(8, 1400) & ~7)),
               intent("ipv4", None, True, None, fragment=True))
        g.emit("ipv4_frag_last", tags, g.ipv4(flags=0, frag=r.randrange(1, 1000), proto=17) / Raw(g.payload(r.randrange(1, 1400))),
               intent("ipv4", None, True, None, fragment=True))

        for _ in range(2):
            g.emit("ipv6_tcp", tags, g.ipv6() / g.tcp() / Raw(g.payload(g.size())), intent("ipv6", "tcp", True, True))
            g.emit("ipv6_udp", tags, g.ipv6() / g.udp() / Raw(g.payload(g.size())), intent("ipv6", "udp", True, True))
        g.emit("ipv6_udp_csum0", tags, g.ipv6() / g.udp(chksum=0) / Raw(g.payload(g.size())),
               intent("ipv6", "udp", True, False), variants=("good",))
        g.emit("ipv6_icmpv6", tags, g.ipv6() / ICMPv6EchoRequest(id=r.randrange(65536), data=g.payload(g.size())),
               intent("ipv6", None, True, None))
        for chain in (["hbh"], ["dst"], ["rt"], ["hbh", "dst", "rt", "dst"], ["hbh", "rt"]):
            name = "ipv6_" + "_".join(chain)
            l4 = r.choice(["tcp", "udp"])
            top = (g.tcp() if l4 == "tcp" else g.udp()) / Raw(g.payload(g.size()))
            g.emit(name + "_" + l4, tags, stack([g.ipv6()] + ipv6_ext_headers(r, chain), top),
                   intent("ipv6", l4, True, True))
        # All four extension-header kinds, fragment header included: first and later fragments.
        hdrs = ipv6_ext_headers(r, ["hbh", "dst", "rt"])
        g.emit("ipv6_hbh_dst_rt_frag_first_tcp", tags,
               stack([g.ipv6()] + hdrs + [IPv6ExtHdrFragment(offset=0, m=1, id=r.getrandbits(32))],
                     g.tcp() / Raw(g.payload(r.randrange(8, 1200)))),
               intent("ipv6", None, True, None, fragment=True))
        hdrs = ipv6_ext_headers(r, ["hbh", "rt"])
        g.emit("ipv6_hbh_rt_frag_later", tags,
               stack([g.ipv6()] + hdrs + [IPv6ExtHdrFragment(offset=r.randrange(1, 8000), m=r.randrange(2), id=r.getrandbits(32), nh=17)],
                     Raw(g.payload(r.randrange(8, 1200)))),
               intent("ipv6", None, True, None, fragment=True))
        # RFC 6946 atomic fragment (offset 0, M 0): a whole datagram, its L4 checksum is checked.
        l4 = r.choice(["tcp", "udp"])
        top = (g.tcp() if l4 == "tcp" else g.udp()) / Raw(g.payload(g.size()))
        g.emit("ipv6_atomic_frag_" + l4, tags,
               stack([g.ipv6()] + ipv6_ext_headers(r, ["hbh"]) + [IPv6ExtHdrFragment(offset=0, m=0, id=r.getrandbits(32))], top),
               intent("ipv6", l4, True, True))
        g.emit("ipv6_frag_first_udp", tags,
               g.ipv6() / IPv6ExtHdrFragment(offset=0, m=1, id=r.getrandbits(32)) / g.udp(len=r.randrange(1300, 8000)) / Raw(g.payload(r.randrange(8, 1200))),
               intent("ipv6", None, True, None, fragment=True))

        # Non-IP.
        g.emit("arp", tags, ARP(op=r.choice([1, 2]), hwsrc=g.mac(), psrc=g.ip4(), hwdst=g.mac(), pdst=g.ip4()), intent(None, None))
        g.ethertype(0x88B5, tags, r.randrange(0, 1400))  # local experimental
        g.ethertype(0x88CC, tags, r.randrange(0, 600))  # LLDP (random body)
        g.ethertype(0x8137, tags, r.randrange(0, 100))  # IPX (random body)

    # 802.3 length-field frame with LLC (untagged; type/length < 0x600).
    for n in (3, 40, 1400):
        g.add("dot3_llc", g.pad(raw(Dot3(src=g.mac(), dst="01:80:c2:00:00:00") / LLC(dsap=0x42, ssap=0x42, ctrl=3) / Raw(g.payload(n)))),
              intent(None, None))

    # Special checksum values: IPv4 header checksum 0x0000, TCP checksum 0x0000, UDP checksum that
    # computes to 0 and is sent as 0xFFFF (IPv4 and IPv6).
    for tags in ((), (0x8100,)):
        ip = g.ipv4(id=0) / g.udp() / Raw(g.payload(20))
        ip.id = Ether(raw(NOARP / ip))[IP].chksum  # header sum + id = 0xFFFF -> checksum 0
        g.emit("ipv4_hdr_csum_0000", tags, ip, intent("ipv4", "udp", True, True))
        for l3, l4 in (("ipv4", "tcp"), ("ipv4", "udp"), ("ipv6", "tcp"), ("ipv6", "udp")):
            base = g.ipv4() if l3 == "ipv4" else g.ipv6()
            hdr = g.tcp(options=[]) if l4 == "tcp" else g.udp()
            body = bytearray(g.payload(2 * r.randrange(1, 20)) + b"\0\0")
            c = Ether(raw(NOARP / base / hdr / Raw(bytes(body))))[TCP if l4 == "tcp" else UDP].chksum
            body[-2:] = struct.pack("!H", c)  # the data now sums to -0: checksum 0 (UDP: 0xFFFF)
            pkt = base / hdr / Raw(bytes(body))
            got = Ether(raw(NOARP / pkt))[TCP if l4 == "tcp" else UDP].chksum
            if got != (0xFFFF if l4 == "udp" else 0x0000):
                raise SystemExit(f"make_frames.py: internal: forced {l3}/{l4} checksum came out {got:#06x}")
            g.emit(f"{l3}_{l4}_csum_{got:04x}", tags, pkt, intent(l3, l4, True, True))

    # Small frames: the IP datagram ends before 60 bytes; the rest is padding.
    for tags in TAG_CONFIGS[:3]:
        g.emit("small_ipv4_udp", tags, g.ipv4() / g.udp() / Raw(g.payload(r.randrange(0, 6))), intent("ipv4", "udp", True, True))
        g.emit("small_ipv4_tcp", tags, g.ipv4() / g.tcp(options=[]), intent("ipv4", "tcp", True, True))
        g.emit("small_ipv6_udp", tags, g.ipv6() / g.udp(), intent("ipv6", "udp", True, True))

    # Full-size and jumbo frames.
    for total, tags in ((1514, ()), (1518, (0x8100,)), (1522, (0x88A8, 0x8100)), (JUMBO, ()), (JUMBO, (0x8100,)),
                        (r.randrange(1600, JUMBO), (0x88A8, 0x8100))):
        l2_len = 14 + 4 * len(tags)
        g.emit(f"size{total}_ipv4_tcp", tags, g.ipv4() / g.tcp(options=[]) / Raw(g.payload(total - l2_len - 40)),
               intent("ipv4", "tcp", True, True))
        g.emit(f"size{total}_ipv6_udp", tags, g.ipv6() / g.udp() / Raw(g.payload(total - l2_len - 48)),
               intent("ipv6", "udp", True, True))
    g.ethertype(0x88B5, (), JUMBO - 14)
    g.emit("jumbo_ipv4_frag_first_udp", (), g.ipv4(flags="MF") / g.udp(len=20000) / Raw(g.payload(JUMBO - 14 - 28)),
           intent("ipv4", None, True, None, fragment=True))

    # Microsoft RSS verification flows as TCP frames.
    for src, sport, dst, dport, ip_hash, tcp_hash in RSS_V4:
        rss = {"tcp": f"0x{tcp_hash:08x}", "ip": f"0x{ip_hash:08x}"}
        g.emit("rss_ms_ipv4_tcp", (), g.ipv4(src=src, dst=dst) / g.tcp(sport=sport, dport=dport) / Raw(g.payload(g.size())),
               intent("ipv4", "tcp", True, True, rss=rss), variants=("good",))
    for src, sport, dst, dport, ip_hash, tcp_hash in RSS_V6:
        rss = {"tcp": f"0x{tcp_hash:08x}", "ip": f"0x{ip_hash:08x}"}
        g.emit("rss_ms_ipv6_tcp", (), g.ipv6(src=src, dst=dst) / g.tcp(sport=sport, dport=dport) / Raw(g.payload(g.size())),
               intent("ipv6", "tcp", True, True, rss=rss), variants=("good",))

    malformed(g)
    return g.frames


def malformed(g):
    """Truncated and invalid frames. Built from good frames whose bytes are then changed or cut, so
    only the stated defect is present."""
    r = g.rng

    def add(kind, tags, pkt, l3, l4, why, cut=None):
        data = raw(g.l2(tags, pkt))
        if cut is not None:
            data = data[:cut]
        g.add(f"malformed_{kind}/tags{len(tags)}", g.pad(data), intent(l3, l4, malformed=why))

    for tags in ((), (0x8100,), (0x88A8, 0x8100)):
        l2_len = 14 + 4 * len(tags)
        add("ipv4_tcp_cut", tags, g.ipv4() / g.tcp() / Raw(g.payload(400)), "ipv4", "tcp",
            "frame ends before the IPv4 total length", cut=l2_len + r.randrange(60, 300))
        add("ipv4_len_beyond_frame", tags, g.ipv4(len=1000) / g.udp() / Raw(g.payload(100)), "ipv4", "udp",
            "IPv4 total length beyond the frame")
        add("ipv4_ihl4", tags, g.ipv4(ihl=4) / g.tcp() / Raw(g.payload(40)), "ipv4", None, "IPv4 IHL below 5")
        add("ipv4_ihl15_short", tags, g.ipv4(ihl=15, len=40) / g.tcp(options=[]), "ipv4", None,
            "IPv4 IHL beyond the total length")
        add("ipv4_total_below_header", tags, g.ipv4(len=12) / g.udp() / Raw(g.payload(30)), "ipv4", None,
            "IPv4 total length below the header length")
        add("ipv4_version6", tags, g.ipv4(version=6) / g.udp() / Raw(g.payload(30)), "ipv4", None,
            "version 6 under ethertype 0x0800")
        add("ipv4_tcp_dataofs3", tags, g.ipv4() / g.tcp(options=[], dataofs=3) / Raw(g.payload(40)), "ipv4", "tcp",
            "TCP data offset below 5")
        add("ipv4_tcp_dataofs_beyond", tags, g.ipv4() / g.tcp(options=[], dataofs=15) / Raw(g.payload(8)), "ipv4", "tcp",
            "TCP header beyond the datagram")
        add("ipv4_tcp_short", tags, g.ipv4(len=30) / g.tcp(options=[]) / Raw(g.payload(20)), "ipv4", "tcp",
            "TCP header cut by the IPv4 total length")
        add("ipv4_udp_len_beyond", tags, g.ipv4() / g.udp(len=200) / Raw(g.payload(50)), "ipv4", "udp",
            "UDP length beyond the datagram")
        add("ipv4_udp_len_below8", tags, g.ipv4() / g.udp(len=4) / Raw(g.payload(50)), "ipv4", "udp",
            "UDP length below 8")
        add("ipv6_udp_cut", tags, g.ipv6() / g.udp() / Raw(g.payload(400)), "ipv6", "udp",
            "frame ends before the IPv6 payload length", cut=l2_len + r.randrange(80, 300))
        add("ipv6_plen_beyond_frame", tags, g.ipv6(plen=600) / g.tcp() / Raw(g.payload(100)), "ipv6", "tcp",
            "IPv6 payload length beyond the frame")
        add("ipv6_version4", tags, g.ipv6(version=4) / g.udp() / Raw(g.payload(30)), "ipv6", None,
            "version 4 under ethertype 0x86dd")
        add("ipv6_ext_beyond_payload", tags,
            g.ipv6(plen=16) / IPv6ExtHdrHopByHop(options=[PadN(optdata=bytes(30))]) / g.udp() / Raw(g.payload(20)),
            "ipv6", None, "IPv6 extension header beyond the payload length")
        add("ipv6_tcp_short", tags, g.ipv6(plen=12) / g.tcp(options=[]) / Raw(g.payload(20)), "ipv6", "tcp",
            "TCP header cut by the IPv6 payload length")
        add("ipv6_udp_len_beyond", tags, g.ipv6() / g.udp(len=300) / Raw(g.payload(50)), "ipv6", "udp",
            "UDP length beyond the datagram")


# ---- the oracle: dissect the bytes with scapy and compute the verdicts ------------------------

def oracle(index, kind, data, want):
    pkt = Ether(data)
    if want["malformed"] is None and raw(pkt) != data:
        raise SystemExit(f"make_frames.py: internal: frame {index} ({kind}) does not round-trip through scapy")

    # L2: at most two tags.
    tags, layer, l2_len = [], pkt.payload, 14
    if isinstance(pkt, Dot3):
        layer = None
    while isinstance(layer, (Dot1Q, Dot1AD)) and len(tags) < 2:
        tags.append(layer)
        l2_len += 4
        layer = layer.payload
    ethertype = struct.unpack("!H", data[l2_len - 2:l2_len])[0]
    l3 = {0x0800: "ipv4", 0x86DD: "ipv6"}.get(ethertype)
    vlan = {"vid": tags[0].vlan, "pcp": tags[0].prio} if tags else None

    rec = {"index": index, "kind": kind, "len": len(data), "l3": l3, "l4": None,
           "fragment": False, "vlan": vlan, "l3_csum_ok": None, "l4_csum_ok": None,
           "csum": None, "malformed": want["malformed"], "rss_ms": want["rss"]}

    # Sum of the IP datagram per its length field (clipped), else of everything after L2.
    if l3 == "ipv4":
        end = l2_len + struct.unpack("!H", data[l2_len + 2:l2_len + 4])[0]
    elif l3 == "ipv6":
        end = l2_len + 40 + struct.unpack("!H", data[l2_len + 4:l2_len + 6])[0]
    else:
        end = len(data)
    rec["csum"] = f"0x{ones_sum(data[l2_len:min(end, len(data))]):04x}"

    if want["malformed"] is not None:
        rec["l4"] = want["l4"]
        return rec

    if l3 == "ipv4":
        ip = pkt[IP]
        if ip.underlayer is not (tags[-1] if tags else pkt):
            raise SystemExit(f"make_frames.py: internal: frame {index} ({kind}): scapy did not find IPv4 after L2")
        rec["l3_csum_ok"] = checksum(data[l2_len:l2_len + ip.ihl * 4]) == 0
        rec["fragment"] = bool(ip.flags.MF) or ip.frag != 0
        proto, l4_bytes = ip.proto, data[l2_len + ip.ihl * 4:l2_len + ip.len]
    elif l3 == "ipv6":
        ip = pkt[IPv6]
        rec["l3_csum_ok"] = True
        frag = pkt.getlayer(IPv6ExtHdrFragment)
        rec["fragment"] = frag is not None and (frag.offset != 0 or frag.m == 1)
        # Walk scapy's dissected extension headers to the upper layer.
        u = ip.payload
        proto = ip.nh
        while isinstance(u, (IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, IPv6ExtHdrFragment)):
            proto = u.nh
            u = u.payload
        start = len(data) - len(raw(u))
        l4_bytes = data[start:l2_len + 40 + ip.plen]
    else:
        proto = None

    if l3 is not None and not rec["fragment"] and proto in (6, 17):
        rec["l4"] = "tcp" if proto == 6 else "udp"
        u = pkt[TCP] if proto == 6 else pkt[UDP]
        if proto == 17 and u.chksum == 0:
            rec["l4_csum_ok"] = l3 == "ipv4"  # absent over IPv4; forbidden over IPv6
        elif l3 == "ipv4":
            rec["l4_csum_ok"] = in4_chksum(proto, pkt[IP], l4_bytes) == 0
        else:
            rec["l4_csum_ok"] = in6_chksum(proto, u, l4_bytes) == 0

    got = (rec["l3"], rec["l4"], rec["l3_csum_ok"], rec["l4_csum_ok"], rec["fragment"])
    meant = (want["l3"], want["l4"], want["l3_ok"], want["l4_ok"], want["fragment"])
    if got != meant:
        raise SystemExit(f"make_frames.py: frame {index} ({kind}): scapy says "
                         f"(l3, l4, l3_ok, l4_ok, fragment) = {got}, built as {meant}")
    if want["rss"] is not None:
        s = pkt[IP] if l3 == "ipv4" else pkt[IPv6]
        t = pkt[TCP]
        h4 = toeplitz(MS_KEY, rss_input(s.src, s.dst, t.sport, t.dport))
        h2 = toeplitz(MS_KEY, rss_input(s.src, s.dst))
        if want["rss"] != {"tcp": f"0x{h4:08x}", "ip": f"0x{h2:08x}"}:
            raise SystemExit(f"make_frames.py: frame {index}: Toeplitz over the frame's fields disagrees with the table")
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pcap")
    ap.add_argument("jsonl")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    frames = generate(args.seed)
    records = [oracle(i, kind, data, want) for i, (kind, data, want) in enumerate(frames)]

    # Classic pcap, little endian, microsecond timestamps, LINKTYPE_ETHERNET; frame i at i us.
    with open(args.pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, (_, data, _) in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1_000_000, i % 1_000_000, len(data), len(data)))
            f.write(data)
    back = [bytes(p) for p in rdpcap(args.pcap)]
    if back != [data for _, data, _ in frames]:
        raise SystemExit("make_frames.py: the pcap does not read back as written")
    with open(args.jsonl, "w") as f:
        for rec in records:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
    print(f"make_frames.py: {len(frames)} frames -> {args.pcap}, {args.jsonl} (seed {args.seed})")


if __name__ == "__main__":
    main()
