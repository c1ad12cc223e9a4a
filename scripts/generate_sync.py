#!/usr/bin/env python3
"""Generate the blocking SDK (``client/_sync``) from the awaited one (``client/_async``).

    python scripts/generate_sync.py           # rewrite client/_sync/{client,transport}.py
    python scripts/generate_sync.py --check   # exit 1 and show the difference if they are stale

Token-based (the ``unasync`` library, as httpcore and urllib3 use it): ``async``/``await`` are
dropped and ``Async*`` names made plain; ``io.py`` is the one hand-written file on each side.
"""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

import tokenize_rt
import unasync

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("client.py", "transport.py")
RULE = unasync.Rule("/_async/", "/_sync/", additional_replacements={
    "AsyncClient": "Client",      # httpx.AsyncClient and ours
    "_async": "_sync",            # reelfarm.client._async.io -> ._sync.io
    "aclose": "close",
    "aread": "read",
    "aiter_bytes": "iter_bytes",
})


def generated(source: Path) -> str:
    tokens = tokenize_rt.src_to_tokens(source.read_text(encoding="utf-8"))
    body = tokenize_rt.tokens_to_src(RULE._unasync_tokens(tokens))
    banner = (f"# Generated from client/_async/{source.name} by scripts/generate_sync.py; "
              "edit that file and run the script.\n")
    return banner + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if client/_sync is stale; write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args(argv)
    stale = []
    for name in SOURCES:
        source, target = args.root / "client/_async" / name, args.root / "client/_sync" / name
        text = generated(source)
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if text == current:
            continue
        stale.append(name)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                current.splitlines(True), text.splitlines(True), f"client/_sync/{name} (committed)",
                f"client/_sync/{name} (generated)"))
        else:
            target.write_text(text, encoding="utf-8")
    if stale and args.check:
        print(f"\nclient/_sync is stale ({', '.join(stale)}): run python scripts/generate_sync.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
