#!/usr/bin/env python3
"""Where the suite's time goes: sums the lines `REELFARM_TEST_CPU=DIR pytest ...` wrote to DIR
(each test's CPU seconds, its own and its waited-for processes', and its wall seconds), by file.

    REELFARM_TEST_CPU=/tmp/cpu pytest -q -n 4 --dist loadfile && scripts/test-cpu.py /tmp/cpu
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path


def main(folder: str, most: int = 40) -> None:
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for path in Path(folder).glob("cpu-*.tsv"):
        for line in path.read_text(encoding="utf-8").splitlines():
            cpu, wall, nodeid = line.split("\t", 2)
            row = by_file[nodeid.split("::", 1)[0]]
            row[0] += float(cpu)
            row[1] += float(wall)
            row[2] += 1
    total_cpu, total_wall = sum(r[0] for r in by_file.values()), sum(r[1] for r in by_file.values())
    print(f"{total_cpu / 60:.1f} CPU minutes, {total_wall / 60:.1f} test minutes, {len(by_file)} files")
    print(f"{'CPU s':>8} {'wall s':>8} {'tests':>6}  file")
    for name, (cpu_s, wall_s, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:most]:
        print(f"{cpu_s:8.1f} {wall_s:8.1f} {int(n):6d}  {name}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
