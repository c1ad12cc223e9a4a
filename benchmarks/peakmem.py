"""The largest resident set of any process of `reelfarm render`, from a small parent.

    python -m benchmarks.peakmem                      # 2160p, busy.json stretched to 6 s
    python -m benchmarks.peakmem --tree /path/to/another/checkout --resolution 1080

The render runs in a fresh interpreter started by this small process, so what the figure counts
is the render's own processes (Linux: the largest of the child and the chunk processes it waits
for), not pages inherited from a harness holding frames. `--tree` runs another checkout's
`reelfarm render` (and its benchmark document) for a before/after comparison in one run.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peakmem", description=__doc__.split("\n")[0])
    p.add_argument("--tree", type=Path, default=ROOT)
    p.add_argument("--resolution", type=int, default=2160)
    p.add_argument("--seconds", type=float, default=6.0)
    args = p.parse_args(argv)
    from benchmarks.fps import load_doc, scale_doc_time, write_bench_photo

    work = Path(tempfile.mkdtemp(prefix="reelfarm-peakmem-"))
    write_bench_photo(work)
    (work / "doc.json").write_text(json.dumps(scale_doc_time(load_doc(), args.seconds)))
    cmd = [sys.executable, "-m", "reelfarm.cli", "render", str(work / "doc.json"), "-o", str(work / "out.mp4"),
           "--assets", str(work), "--resolution", str(args.resolution)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=args.tree, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    print(json.dumps({"tree": str(args.tree), "resolution": args.resolution, "peak_rss_mib": round(peak, 1),
                      "wall_s": round(wall, 2), "line": done.stdout.strip().splitlines()[-1]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
