"""Where a compiled policy's `choose` spends its time, by compiled function, sampled by Linux perf.

    python benchmarks/perf_choose.py [--policy lookahead] [-n 300] [--seconds 15] [--instructions 10]

Collects the positions of the built-in policy's own games on the first N
deals of seed 1 (the next card drawn, as choose_ab.py does), compiles a loop
calling the policy file's `choose` on each (numba's disk cache off, one
thread), then plays it over and over while `perf record -p PID` samples this
process, and prints each compiled function's share of the samples (functions
inlined into another count as part of it) and, with --instructions K, the K
instructions with the most samples in each of the largest functions.

perf cannot name numba's functions on its own: their machine code lives in
memory that no file maps. So the script writes perf's symbol map for this
process (/tmp/perf-PID.map: the address of each function of the loop's
compiled library, up to the next one) and reads the instructions from its
own memory for objdump. The code sampled is the code a run plays;
NUMBA_ENABLE_PROFILING, the other way to name the functions, compiles
them with debug information and ran 1.6x slower here. Needs `perf` (Debian:
linux-perf) and, for --instructions, `objdump` (binutils); on a machine
without hardware counters perf samples the CPU clock, which is enough.
"""

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from choose_ab import choose_inputs, load, looped  # noqa: E402  (benchmarks/choose_ab.py)
from sim.errors import parse_count  # noqa: E402  (1e5 as sim takes it)


def functions(dispatcher) -> list[tuple[int, int, str]]:
    """(address, size, name) of every function defined in the dispatcher's compiled library, by address.

    A function's size is taken up to the next function's address (at most 1 MiB): numba lays a library's
    functions out one after another.
    """
    library = dispatcher.overloads[dispatcher.signatures[0]].library
    found = []
    for fn in library._final_module.functions:
        if fn.is_declaration:
            continue
        address = library.get_pointer_to_function(fn.name)
        if address:
            found.append((address, fn.name))
    found.sort()
    ends = [a for a, _ in found[1:]] + [found[-1][0] + 4096]
    return [(a, min(end - a, 1 << 20), name) for (a, name), end in zip(found, ends)]


def short_name(symbol: str) -> str:
    """`module.function` of a numba-mangled symbol (_ZN<len><part>...<len><name>B<n>v...)."""
    parts, i = [], 3 if symbol.startswith("_ZN") else 0
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while j < len(symbol) and symbol[j].isdigit():
            j += 1
        size = int(symbol[i:j])
        parts.append(symbol[j:j + size])
        i = j + size
    return ".".join(parts) if parts else symbol


def read_code(address: int, size: int) -> bytes:
    """The bytes of this process's memory at address, up to size or the first unreadable page."""
    data = b""
    with open("/proc/self/mem", "rb", 0) as mem:
        for offset in range(0, size, 4096):
            try:
                mem.seek(address + offset)
                data += mem.read(min(4096, size - offset))
            except OSError:
                break
    return data


def hot_instructions(code: bytes, address: int, samples: collections.Counter, k: int) -> list[tuple[int, str]]:
    """The k instructions of `code` (at `address`) with the most samples: (samples, address: instruction)."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        listing = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", f"--adjust-vma={address:#x}",
                                  f.name], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in listing.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(.*)", line)
        if m and samples[int(m.group(1), 16)]:
            rows.append((samples[int(m.group(1), 16)], f"{m.group(1)}: {m.group(2)}"))
    return sorted(rows, reverse=True)[:k]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="lookahead", help="the built-in whose games give the positions")
    parser.add_argument("--file", help="the policy file to profile (default policies/POLICY.py)")
    parser.add_argument("-n", type=parse_count, default=300, help="deals of seed 1 (default 300)")
    parser.add_argument("--seconds", type=float, default=15.0, help="how long perf samples (default 15)")
    parser.add_argument("--instructions", type=int, default=0, metavar="K",
                        help="also print the K hottest instructions of each function above 5%% (needs objdump)")
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be above 0")
    for tool in ("perf",) + (("objdump",) if args.instructions else ()):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed")

    import numpy as np

    path = args.file or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "policies",
                                     f"{args.policy}.py")
    states, cards, legals, rules, params = choose_inputs(args.policy, args.n)
    out = np.empty(len(states), np.int64)

    with tempfile.TemporaryDirectory() as tmp:
        choose_all = looped(load(path, "perf_choose_policy", tmp).choose)
        choose_all(states[:3], cards[:3], legals[:3], rules, params, out)  # compile
        table = functions(choose_all)
        symbol_map = f"/tmp/perf-{os.getpid()}.map"
        with open(symbol_map, "w") as f:
            f.writelines(f"{a:x} {size:x} {name}\n" for a, size, name in table)
        try:
            data = os.path.join(tmp, "perf.data")
            perf = subprocess.Popen(["perf", "record", "-q", "-F", "2000", "-p", str(os.getpid()), "-o", data],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)  # perf attaches
            rounds, start = 0, time.process_time()
            t0 = time.monotonic()
            while time.monotonic() - t0 < args.seconds:
                choose_all(states, cards, legals, rules, params, out)
                rounds += 1
            spent = time.process_time() - start
            perf.send_signal(signal.SIGINT)
            _, perf_errors = perf.communicate()
            ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True, text=True).stdout
        finally:
            os.unlink(symbol_map)
    samples = collections.Counter(int(line, 16) for line in ips.split() if line)
    total = sum(samples.values())
    if total == 0:
        sys.exit(f"perf recorded no samples of this process: {perf_errors.strip() or 'no reason given'}")
    starts = [a for a, _, _ in table]
    own = collections.Counter()  # samples per function of `table`, by index; -1 outside the library
    for ip, count in samples.items():
        i = int(np.searchsorted(starts, ip, side="right")) - 1
        own[i if i >= 0 and ip < table[i][0] + table[i][1] else -1] += count
    by_function = collections.Counter()
    for i, count in own.items():
        by_function[short_name(table[i][2]) if i >= 0 else "(outside the compiled library: malloc, memset, ...)"] \
            += count
    print(f"{len(states):,} positions of {args.policy}'s games on deals 0..{args.n - 1} of seed 1, {rounds} rounds "
          f"of choose on all of them: {spent / rounds * 1e3:.1f} ms of CPU each; {total:,} samples")
    for name, count in by_function.most_common():
        print(f"  {100 * count / total:5.1f}%  {name}")
    if args.instructions:
        for i, (address, size, name) in enumerate(table):
            if own[i] < 0.05 * total:
                continue
            print(f"{short_name(name)}: its {args.instructions} hottest instructions")
            for count, text in hot_instructions(read_code(address, size), address, samples, args.instructions):
                print(f"  {100 * count / total:5.2f}%  {text}")


if __name__ == "__main__":
    main()
