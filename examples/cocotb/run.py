#!/usr/bin/env python3
"""Build nicgen's generated RX path with Icarus Verilog and run test_eth_rx.py on it with cocotb.

Usage: python3 run.py GEN_DIR [--frames N] [--seed S] [--build-dir DIR] [--waves]

GEN_DIR is the output of `nicgen generate` (any preset): the sources are the files listed in its
`files.f`, and the top is the RX path module `eth_rx_d<W>` found there. Icarus elaborates only
that module and its children, so the rest of the NIC in the list costs nothing.

Exits 0 when every test passed, 1 when any failed (or none ran), and prints
`cocotb: N passed, M failed`. The results are in BUILD_DIR/results.xml (xUnit); with --waves
the run also writes BUILD_DIR/eth_rx_d<W>.fst.
"""

import argparse
import re
import sys
from pathlib import Path

from cocotb_tools.check_results import get_results
from cocotb_tools.runner import get_runner

HERE = Path(__file__).resolve().parent


def rx_top(gen: Path) -> tuple[str, list[Path]]:
    """The RX path module of a `nicgen generate` output and every file of its `files.f`."""
    files_f = gen / "files.f"
    if not files_f.is_file():
        sys.exit(f"run.py: {files_f} not found: run `nicgen generate --out {gen}` first")
    files = [gen / line.strip() for line in files_f.read_text().splitlines() if line.strip()]
    tops = [f.stem for f in files if re.fullmatch(r"eth_rx_d\d+", f.stem)]
    if len(tops) != 1:
        sys.exit(f"run.py: expected one eth_rx_d<W>.v in {files_f}, found {tops}")
    return tops[0], files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gen", type=Path, help="output directory of `nicgen generate`")
    ap.add_argument("--frames", type=int, default=32,
                    help="random frames in the good-frames test (default 32)")
    ap.add_argument("--seed", type=int, help="cocotb random seed (default: chosen by cocotb)")
    ap.add_argument("--build-dir", type=Path, help="Icarus build and results (default GEN_DIR/cocotb)")
    ap.add_argument("--waves", action="store_true", help="dump an FST of the run")
    args = ap.parse_args()

    gen = args.gen.resolve()
    top, sources = rx_top(gen)
    build = (args.build_dir or gen / "cocotb").resolve()
    sys.path.insert(0, str(HERE))  # the runner hands sys.path to the simulator's Python

    runner = get_runner("icarus")
    runner.build(
        sources=sources,
        hdl_toplevel=top,
        build_dir=build,
        timescale=("1ns", "1ps"),
        waves=args.waves,
        always=True,  # a second or two; a build dir reused with or without --waves stays right
    )
    results = runner.test(
        test_module="test_eth_rx",
        hdl_toplevel=top,
        build_dir=build,
        test_dir=build,
        seed=args.seed,
        waves=args.waves,
        extra_env={"NICGEN_COCOTB_FRAMES": str(args.frames)},
    )
    total, failed = get_results(Path(results))
    print(f"cocotb: {total - failed} passed, {failed} failed ({top}, results in {results})")
    return 0 if total > 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
