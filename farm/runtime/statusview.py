"""How ``reelfarm farm status`` shows the farm: a node's fields typed for ``--json`` (Redis keeps
them as strings), and the text view, which fits the terminal's width (80 columns included) by
giving each node and each render a few short lines instead of a table a dozen columns wide.
Queues and workspaces stay tables: their columns are short numbers. No I/O here.
"""
from __future__ import annotations

import textwrap
import time
from typing import Any

from reelfarm.farm.services.pools import split_queues

INTS = ("pid", "cores", "gpu_memory_total", "gpu_memory_used", "gpu_utilization", "nvenc_capacity", "failures")
FLOATS = ("last_seen", "set_aside_until")
FLAGS = ("nvenc",)
GIB = 1024 ** 3


def _number(value: Any, kind: type) -> Any:
    if value is None or value == "":
        return None
    try:
        return kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        return value


def typed_node(node: dict[str, Any]) -> dict[str, Any]:
    """A node's record with numbers as numbers, flags as booleans, its queues as a list and empty
    fields as null (``--json``)."""
    out = {k: (None if v == "" else v) for k, v in node.items()}
    for key in INTS:
        if key in out:
            out[key] = _number(out[key], int)
    for key in FLOATS:
        if key in out:
            out[key] = _number(out[key], float)
    for key in FLAGS:
        if key in out:
            out[key] = out[key] in ("1", 1, True, "true")
    if "queues" in out:
        out["queues"] = split_queues(str(out["queues"] or ""))
    return out


def typed_status(status: dict[str, Any]) -> dict[str, Any]:
    return {**status, "nodes": [typed_node(n) for n in status.get("nodes", [])]}


def _cut(text: str, width: int, indent: str) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False) or [indent]


def _table(headers: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Columns as wide as their widest cell; the first left-aligned, numbers right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return (indent + "  ".join([first, *rest])).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1].rstrip() + "~"


def _gpu(node: dict[str, Any]) -> str:
    nvml = node.get("nvml") or "ok"
    if not node.get("gpu"):
        return "no GPU" if nvml == "ok" else f"no GPU ({nvml})"
    parts = []
    if node.get("gpu_memory_total"):
        parts.append(f"{(node.get('gpu_memory_used') or 0) / GIB:.1f}/{node['gpu_memory_total'] / GIB:.1f} GiB")
    if node.get("gpu_utilization") is not None:
        parts.append(f"{node['gpu_utilization']} % busy")
    return f"GPU {node['gpu']}" + (f" ({', '.join(parts)})" if parts else "")


def _nvenc(node: dict[str, Any]) -> str:
    if not node.get("nvenc"):
        return "NVENC no"
    return f"NVENC yes ({node['nvenc_capacity']} % free)" if node.get("nvenc_capacity") is not None else "NVENC yes"


def _state(node: dict[str, Any]) -> str:
    if not node.get("alive"):
        return "GONE"
    if node.get("set_aside"):
        until = time.strftime("%H:%M:%S", time.localtime(float(node.get("set_aside_until") or 0)))
        return f"set aside until {until}: {node.get('failure') or ''}".rstrip(": ")
    return str(node.get("state") or "")


def node_lines(node: dict[str, Any], width: int) -> list[str]:
    job = f", job {node['current_job']}" if node.get("current_job") else ""
    raster = node.get("raster") or "cpu"
    if node.get("gl_renderer"):
        raster += f" ({node['gl_renderer']})"
    head = f"{node['name']}: {_state(node)}{job} (seen {node.get('seen_sec_ago', '?')} s ago)"
    if node.get("disabled"):
        off = node["disabled"]
        head += f"; DISABLED by {off['by']}" + (f" ({off['reason']})" if off.get("reason") else "")
    host = (f"{node.get('hostname') or '?'}, pid {node.get('pid') or '?'}, {node.get('cores') or '?'} cores; "
            f"queues {','.join(node.get('queues') or []) or '-'}")
    kit = f"raster {raster}; encoder {node.get('encoder') or 'x264'}; {_gpu(node)}; {_nvenc(node)}"
    return [*_cut(head, width, "  "), *_cut(host, width, "    "), *_cut(kit, width, "    ")]


def render_lines(render: dict[str, Any], width: int) -> list[str]:
    state = render["status"] + (f": {render['held_up']['message']}" if render.get("held_up") else "")
    made_by = f", {render['encoder']}/{render.get('raster') or 'cpu'}" if render.get("encoder") else ""
    done = render["frames_done"] if render["frames_done"] is not None else "?"
    frames = f"{done}/{render['frames_total']} frames"
    if render.get("reused_frames"):
        frames += f" ({render['reused_frames']} reused)"
    head = f"{render['id']} {state}"
    detail = (f"{render['format']} {render['resolution']}p{render['fps']}{made_by}; {frames}; "
              f"{render['frames_per_sec'] if render['frames_per_sec'] is not None else '?'} frames/s; "
              f"{render['elapsed_sec']} s")
    return [*_cut(head, width, "  "), *_cut(detail, width, "    ")]


def status_lines(status: dict[str, Any], width: int = 80) -> list[str]:
    """The text view of a (typed) status, no line wider than ``width`` (ids are never cut)."""
    width = max(40, width)
    lines = [f"mode: {status['mode']}"]
    if status.get("paused"):
        paused = status["paused"]
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(paused["at"])))
        lines += _cut(f"dispatch: PAUSED since {since} by {paused['by']}"
                      + (f" ({paused['reason']})" if paused.get("reason") else "")
                      + "; `reelfarm farm resume` to dispatch again", width, "")
    for source, why in sorted(status.get("unavailable", {}).items()):
        shown = {"database": "renders in flight and workspaces' names, weights and caps are not shown",
                 "redis": "nodes, queues and the workspaces' loads are not shown"}.get(source, "")
        lines += _cut(f"unavailable: {why}; {shown}" if shown else f"unavailable: {why}", width, "")
    if status["mode"] == "farm":
        nodes = status.get("nodes", [])
        lines += ["", f"nodes ({len(nodes)})" if nodes else "nodes: none seen in the last day"]
        for node in nodes:
            lines += node_lines(node, width)
    queues = status.get("queues", {})
    columns = sorted({k for d in queues.values() for k in d})
    lines += ["", "queues"]
    lines += _table(["queue", *columns], [[name, *(str(d.get(c, 0)) for c in columns)]
                                          for name, d in sorted(queues.items())]) if queues else ["  (none)"]
    if status.get("workspaces"):
        lines += ["", "workspaces (fair dispatch)"]
        rows = [[f"{_short(w['name'] or '?', 20)} {w['id'][:8]}", str(w["running"]), str(w["waiting"]),
                 f"{w['waiting_frames']:,}", f"{w['weight']:g}" if w["weight"] is not None else "-", str(w["cap"] or "-"),
                 f"{100 * w['share']:.0f} %" if w["share"] is not None else "-"] for w in status["workspaces"]]
        lines += _table(["workspace", "running", "waiting", "frames", "weight", "cap", "share"], rows)
    renders = status.get("renders", [])
    lines += ["", f"renders in flight ({len(renders)})" if renders else "renders in flight: none"]
    for render in renders:
        lines += render_lines(render, width)
    return lines
