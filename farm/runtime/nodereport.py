"""``reelfarm node check``'s report, as rich tables on stdout (``--json`` prints ``NodeReport.as_dict``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reelfarm.farm.runtime.nodecheck import NodeReport


def _yes(ok: Any) -> str:
    return "[green]ok[/green]" if ok else "[red]FAIL[/red]"


def print_report(report: NodeReport) -> None:
    """The report as rich tables on stdout."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    node = Table("", "", title="node", show_header=False)
    gl = report.gl
    node.add_row("host", f"{report.host['hostname']} ({report.host['cores']} cores)")
    node.add_row("GL", (f"{gl['renderer']}{' (software)' if gl.get('software') else ''}; EGL {gl['platform']} "
                        f"platform, device: {gl['device']}") if gl.get("ok") else f"none: {gl.get('error')}")
    node.add_row("EGL devices", ", ".join(gl.get("devices", [])) or "none enumerated")
    nvml = report.nvml
    node.add_row("NVML", f"{nvml['model']}, {nvml['memory_total'] / 1024 ** 3:.1f} GiB, driver {nvml['driver']}"
                 if nvml.get("ok") else f"none: {nvml.get('reason')}")
    nvenc = report.nvenc
    node.add_row("NVENC", f"session opened, {nvenc['decoded_frames']}/{nvenc['expected_frames']} frames decoded"
                 if nvenc.get("ok") else f"no: {nvenc.get('reason')}")
    node.add_row("farm", _farm_row(report.farm))
    speed = report.speed
    node.add_row(f"frames/s at {speed['size']}", "  ".join(
        f"{label} {speed[key] if speed.get(key) is not None else '-'}"
        for label, key in (("x264", "x264_fps"), ("CPU raster", "cpu_raster_fps"), ("GL raster", "gl_raster_fps"))))
    console.print(node)
    if report.stories:
        stories = Table("story", "size", "max diff", "mean diff", "mismatch", "tolerance", "",
                        title=f"GL against the CPU, each story's reference frame at {report.stories[0]['resolution']}p")
        for row in report.stories:
            stories.add_row(row["story"], f"{row['resolution']}p {row['format']}", str(row.get("max_diff", "-")),
                            str(row.get("mean_diff", "-")), f"{row['mismatch']:.4%}" if "mismatch" in row
                            else row.get("error", "-"), f"{row['tolerance']:.2%}", _yes(row.get("ok")))
        console.print(stories)
    serving = Table("", "configured", "will be", "", "why", title="serving")
    config = report.config
    raster = report.raster
    serving.add_row("raster", config["raster"] + (" (hardware GL)" if config["hardware_gl"] else ""),
                    raster["kind"] + (" (hardware only)" if raster.get("hardware_only") else ""),
                    _yes(raster["ok"]), raster["why"])
    serving.add_row("encoder", config["encoder"], report.encoder["family"], _yes(report.encoder["ok"]),
                    report.encoder["why"])
    queues = report.queues
    serving.add_row("queues", ",".join(queues["asked"]), ",".join(queues["work"]) or "-", _yes(queues["work"]),
                    queues["why"])
    console.print(serving)
    if report.ok:
        console.print("[bold green]this node can serve what it is configured for[/bold green]")
    else:
        for problem in report.problems:
            console.print(f"[red]- {problem}[/red]")
        console.print("[bold red]this node cannot serve what it is configured for[/bold red]")


def _farm_row(farm: dict[str, Any]) -> str:
    from rich.markup import escape  # a failure may hold brackets ("[Errno 28]")

    if not farm.get("asked"):
        return "not asked (no --redis-url / REELFARM_REDIS_URL)"
    if "error" in farm:
        return escape(farm["error"])
    rows = []
    for node in farm["nodes"]:
        if not node["alive"]:
            rows.append(f"{node['name']}: gone")
        elif node["set_aside"]:
            rows.append(f"{node['name']}: [red]set aside: {escape(node['failure'] or '')}[/red]")
        else:
            rows.append(f"{node['name']}: {escape(node['state'] or '')}")
    return "; ".join(rows) or "no node of this host"


