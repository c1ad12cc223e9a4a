"""``reelfarm node check``: one command that proves a render node can serve what it is configured for.

It looks at this machine the way ``reelfarm worker`` would run on it and measures rather than
trusts:

- host and cores; the GL session the GL rasterizer would get (EGL platform, device, GL_RENDERER;
  ``reelfarm.renderer.gl``) and the EGL devices this machine enumerates;
- every built-in story's reference frame (the goldens' frame, 40% in) drawn with GL at 360p
  against the CPU rasterizer's, with the largest and mean difference and the goldens' measure
  (``compare_frames``, pass at ``GL_MAX_MISMATCH``);
- the first GPU through NVML (model, memory, driver), or why not;
- NVENC: whether a session opens (``nvenc_probe``, the test the worker's encoder choice uses),
  then a 2 s 1080p clip encoded with ``NvencEncoder``, decoded back with PyAV and its frames
  counted; or why not;
- frames/s at 1080p of x264, of the CPU rasterizer and of the GL rasterizer (yuv420p read-back,
  as GL chunks draw), each run for about a second;
- the queues the node would work (``node_queues``) with its ``--raster`` and why;
- with ``--redis-url`` (``REELFARM_REDIS_URL``): this host's nodes as the farm records them, and
  for one it set aside for failing chunks, why (``reelfarm.farm.runtime.nodehealth``).

The verdict (exit 0 only when every requirement holds) follows the configuration:

- ``--raster cpu``: the CPU rasterizer draws. ``auto``: on a node with an NVIDIA GPU, GL on that GPU
  (hardware) is required, as the worker's ``auto`` takes it; elsewhere the CPU. ``gl``: GL is
  required and its frames must match the CPU's; software GL (llvmpipe) passes unless
  ``--hardware-gl`` says GL must be hardware.
- ``--encoder``, resolved as the worker resolves it (``choose_encoder``): ``x264``: x264 encodes.
  ``nvenc``: the NVENC probe must pass (session, clip, frame count). ``auto``: NVENC where a
  session opens (then its clip must pass), else x264.
- at least one queue is left to work;
- no live node of this host is set aside (one that is gone is shown, not held against the host).

Without a GPU (this repository's CI) it reports the CPU, GL on llvmpipe through Mesa, no NVML
driver and no NVENC. On a GPU node, not run here; run
``reelfarm node check --raster gl --hardware-gl --encoder auto`` there (the GPU worker's init
container does, ``deploy/k8s/base/worker-gpu.yaml``).
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reelfarm.farm.runtime.nodereport import print_report
from reelfarm.renderer.spec import ENCODER_KINDS, RASTER_KINDS

if TYPE_CHECKING:
    from reelfarm.renderer.model import Doc
    from reelfarm.renderer.raster import Rasterizer
    from reelfarm.renderer.spec import RenderSpec

STORY_FORMAT = "16:9"
STORY_RESOLUTION = 360
REFERENCE_AT = 0.4  # the goldens' frame: this far into the story (tests/golden)
SPEED_FORMAT, SPEED_RESOLUTION, SPEED_FPS = "16:9", 1080, 30
SPEED_SEC, QUICK_SPEED_SEC = 1.0, 0.3
NVENC_CLIP_SEC = 2
DEFAULT_QUEUES = "render,jobs"


@dataclass(frozen=True)
class NodeConfig:
    """What the node is configured for, as the worker would be started."""

    raster: str = "auto"
    encoder: str = "auto"
    hardware_gl: bool = False
    queues: tuple[str, ...] = ("render", "jobs")
    quick: bool = False
    gpu_index: int = 0


@dataclass
class NodeReport:
    """Everything the check found; `problems` lists why the node cannot serve its configuration."""

    host: dict[str, Any]
    config: dict[str, Any]
    gl: dict[str, Any] = field(default_factory=dict)
    stories: list[dict[str, Any]] = field(default_factory=list)
    nvml: dict[str, Any] = field(default_factory=dict)
    nvenc: dict[str, Any] = field(default_factory=dict)
    speed: dict[str, Any] = field(default_factory=dict)
    raster: dict[str, Any] = field(default_factory=dict)
    encoder: dict[str, Any] = field(default_factory=dict)
    queues: dict[str, Any] = field(default_factory=dict)
    farm: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def check_node(config: NodeConfig) -> NodeReport:
    """Run every probe and judge the node against `config` (see the module docstring)."""
    report = NodeReport(host={"hostname": socket.gethostname(), "cores": os.cpu_count() or 1},
                        config=asdict(config))
    seconds = QUICK_SPEED_SEC if config.quick else SPEED_SEC
    session = _probe_gl(report, config.gpu_index)
    if session is not None:
        report.stories = _compare_stories(session, config)
    report.nvml = _probe_nvml()
    report.speed = _measure_speed(seconds, gl=session is not None, config=config)
    report.nvenc = _probe_nvenc(config.gpu_index)
    _judge_raster(report, config, session)
    _judge_encoder(report, config)
    _judge_queues(report, config)
    return report


# -- probes ---------------------------------------------------------------------------------

def _probe_gl(report: NodeReport, gpu_index: int) -> Any:
    """The GL session this process gets (software allowed: the verdict judges it), or None."""
    from reelfarm.renderer.errors import RasterError
    from reelfarm.renderer.gl import egl_device_choice, egl_devices, gl_session

    report.gl = {"ok": False, "devices": [d.describe() for d in egl_devices()]}
    try:
        report.gl["asked"] = egl_device_choice()
        session = gl_session(gpu_index, hardware_only=False)
    except RasterError as exc:
        report.gl["error"] = str(exc)
        return None
    report.gl.update(ok=True, platform=session.platform, device=session.device or "none (Mesa's surfaceless platform)",
                     renderer=session.renderer, software=session.software)
    return session


def _stories(quick: bool) -> list[Any]:
    from reelfarm.studio.stories import list_stories

    stories = list(list_stories())
    return stories[:1] if quick else stories


def _story_doc(story: Any, fmt: str) -> dict[str, Any]:
    from reelfarm.renderer.tokens import NEUTRAL_BRAND

    return dict(story.build({}, NEUTRAL_BRAND, fmt, None))


def _compare_stories(session: Any, config: NodeConfig) -> list[dict[str, Any]]:
    """Each story's reference frame on GL against the CPU's, at `STORY_RESOLUTION`."""
    from reelfarm.renderer.gl import GL_MAX_MISMATCH, GLRasterizer, compare_frames
    from reelfarm.renderer.model import parse_doc
    from reelfarm.renderer.raster import SkiaRasterizer, to_rgba
    from reelfarm.renderer.spec import RenderSpec

    size = RenderSpec(STORY_FORMAT, STORY_RESOLUTION).size
    rows = []
    for story in _stories(config.quick):
        row: dict[str, Any] = {"story": story.id, "format": STORY_FORMAT, "resolution": STORY_RESOLUTION,
                               "tolerance": GL_MAX_MISMATCH}
        try:
            doc = _story_doc(story, STORY_FORMAT)
            t = round(doc["duration"] * REFERENCE_AT, 3)
            parsed = parse_doc(doc)
            cpu = SkiaRasterizer(parsed, STORY_FORMAT, *size)
            gl = GLRasterizer(parsed, STORY_FORMAT, *size, gpu_index=config.gpu_index)
            try:
                diff = compare_frames(to_rgba(gl.render(t), gl.pixel_format),
                                      to_rgba(cpu.render(t), cpu.pixel_format))
            finally:
                gl.close()
                cpu.close()
            row.update(t=t, max_diff=diff.max_diff, mean_diff=round(diff.mean_diff, 4),
                       mismatch=round(diff.mismatch, 6), ok=diff.ok)
        except Exception as exc:  # noqa: BLE001 - a story that cannot be drawn is a failed row, not a crash
            row.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    return rows


def _probe_nvml() -> dict[str, Any]:
    """The first GPU's model, memory and driver through nvidia-ml-py, or why not."""
    from reelfarm.farm.runtime.nodes import _with_nvml

    def read(nvml: Any, handle: Any) -> dict[str, Any]:
        name, driver = nvml.nvmlDeviceGetName(handle), nvml.nvmlSystemGetDriverVersion()
        return {"model": name.decode() if isinstance(name, bytes) else str(name),
                "memory_total": int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
                "driver": driver.decode() if isinstance(driver, bytes) else str(driver)}

    found, reason = _with_nvml(read)
    return {"ok": True, **found} if found is not None else {"ok": False, "reason": reason}


def _probe_nvenc(gpu_index: int) -> dict[str, Any]:
    """NVENC's probe (`nvenc_probe`: a session opens, or why not), then a `NVENC_CLIP_SEC` s 1080p
    clip encoded, decoded back with PyAV and its frames counted."""
    from reelfarm.renderer.nvenc import nvenc_probe

    expected = NVENC_CLIP_SEC * SPEED_FPS
    opened, reason = nvenc_probe(gpu_index)
    result: dict[str, Any] = {"ok": False, "session": opened, "expected_frames": expected}
    if not opened:
        result["reason"] = reason
        return result
    try:
        encoded, decoded = _nvenc_clip(gpu_index, expected)
    except Exception as exc:  # noqa: BLE001 - EncodeError with PyNvVideoCodec's reason, or PyAV's
        result["reason"] = f"a session opened, but the clip failed: {' '.join(str(exc).split()) or type(exc).__name__}"
        return result
    result.update(encoded_frames=encoded, decoded_frames=decoded)
    if decoded != expected:
        result["reason"] = f"decoded {decoded} of {expected} frames"
    else:
        result["ok"] = True
    return result


def _nvenc_clip(gpu_index: int, frames: int) -> tuple[int, int]:
    import av

    from reelfarm.renderer.nvenc import NvencEncoder

    width, height = _speed_spec().size
    pictures = _cpu_frames(4)
    with tempfile.TemporaryDirectory(prefix="reelfarm-node-check-") as folder:
        path = str(Path(folder) / "nvenc.mp4")
        encoder = NvencEncoder(gpu_id=gpu_index)
        encoder.start(path, width, height, SPEED_FPS, pixel_format=pictures[0][1])
        try:
            for n in range(frames):
                encoder.write(pictures[n % len(pictures)][0])
        finally:
            encoder.finish()
        with av.open(path) as container:
            decoded = sum(1 for _ in container.decode(video=0))
    return encoder.frames_written, decoded


def _speed_spec() -> RenderSpec:
    from reelfarm.renderer.spec import RenderSpec

    return RenderSpec(SPEED_FORMAT, SPEED_RESOLUTION, SPEED_FPS)


def _speed_doc() -> Doc:
    from reelfarm.renderer.model import parse_doc

    return parse_doc(_story_doc(_stories(quick=True)[0], SPEED_FORMAT))


def _cpu_frames(count: int) -> list[tuple[Any, str]]:
    """`count` consecutive 1080p frames from the CPU rasterizer, with its pixel format."""
    from reelfarm.renderer.raster import SkiaRasterizer

    spec = _speed_spec()
    raster = SkiaRasterizer(_speed_doc(), spec.format, *spec.size)
    return [(raster.render(spec.time(n)).copy(), raster.pixel_format) for n in range(count)]


def _rate(step: Callable[[int], object], seconds: float, finish: Callable[[], None] | None = None,
          at_least: int = 3) -> float:
    """Frames/s of `step(n)` called for about `seconds` and `at_least` times, `finish` included."""
    start = time.perf_counter()
    n = 0
    while n < at_least or time.perf_counter() - start < seconds:
        step(n)
        n += 1
    if finish is not None:
        finish()
    return round(n / (time.perf_counter() - start), 1)


def _measure_speed(seconds: float, gl: bool, config: NodeConfig) -> dict[str, Any]:
    """x264, CPU and GL rasterizer frames/s at 1080p, each for about `seconds`; an error is
    recorded in place of a rate."""
    speed: dict[str, Any] = {"size": f"{SPEED_RESOLUTION}p {SPEED_FORMAT}", "seconds": seconds}
    for name, measure in (("x264_fps", lambda: _x264_rate(seconds)), ("cpu_raster_fps", lambda: _raster_rate(
            "cpu", seconds, config)), ("gl_raster_fps", lambda: _raster_rate("gl", seconds, config) if gl else None)):
        try:
            speed[name] = measure()
        except Exception as exc:  # noqa: BLE001 - reported; the verdict reads a missing rate
            speed[name] = None
            speed[name.replace("_fps", "_error")] = f"{type(exc).__name__}: {exc}"
    return speed


def _x264_rate(seconds: float) -> float:
    from reelfarm.renderer.encode import X264Encoder

    spec = _speed_spec()
    pictures = _cpu_frames(4)
    with tempfile.TemporaryDirectory(prefix="reelfarm-node-check-") as folder:
        encoder = X264Encoder()
        encoder.start(str(Path(folder) / "x264.mp4"), *spec.size, spec.fps, pixel_format=pictures[0][1])
        # x264 holds its lookahead and frame threads' frames until finish(): a second of video at
        # least keeps filling and draining that pipeline from being the whole measure.
        return _rate(lambda n: encoder.write(pictures[n % len(pictures)][0]), seconds, encoder.finish,
                     at_least=spec.fps)


def _raster_rate(kind: str, seconds: float, config: NodeConfig) -> float:
    from reelfarm.renderer.gl import GLRasterizer
    from reelfarm.renderer.raster import SkiaRasterizer

    spec = _speed_spec()
    doc = _speed_doc()
    raster: Rasterizer = (GLRasterizer(doc, spec.format, *spec.size, gpu_index=config.gpu_index, yuv=True)
                          if kind == "gl" else SkiaRasterizer(doc, spec.format, *spec.size))
    try:
        raster.render(0.0)
        return _rate(lambda n: raster.render(spec.time(n + 1)), seconds)
    finally:
        raster.close()


# -- verdict --------------------------------------------------------------------------------

def _judge_raster(report: NodeReport, config: NodeConfig, session: Any) -> None:
    from reelfarm.renderer.backends import choose_raster

    choice = choose_raster(config.raster, config.gpu_index)
    hardware = choice.hardware_only or config.hardware_gl
    if choice.kind == "cpu":
        why = ("asked for the CPU" if config.raster == "cpu"
               else f"auto: no NVIDIA GPU {config.gpu_index} here, so the CPU")
        ok = report.speed.get("cpu_raster_fps") is not None
        report.raster = {"kind": "cpu", "hardware_only": False, "draws": "cpu", "ok": ok, "why": why}
        if not ok:
            report.problems.append(f"the CPU rasterizer failed: {report.speed.get('cpu_raster_error')}")
        return
    why = ("auto: an NVIDIA GPU is present, so GL on it (hardware only)" if config.raster == "auto"
           else "asked for GL, hardware only" if hardware else "asked for GL; software GL allowed")
    problems = []
    if session is None:
        problems.append(f"GL is required but no context could be made: {report.gl.get('error')}")
    elif hardware and session.software:
        problems.append(f"hardware GL is required but the renderer is software ({session.renderer}; "
                        f"EGL devices: {', '.join(report.gl['devices']) or 'none'})")
    bad = [row["story"] for row in report.stories if not row.get("ok")]
    if session is not None and bad:
        problems.append(f"GL frames differ from the CPU's beyond the goldens' tolerance: {', '.join(bad)}")
    if session is not None and report.speed.get("gl_raster_fps") is None:
        problems.append(f"the GL rasterizer failed at 1080p: {report.speed.get('gl_raster_error')}")
    draws = "gl" if session is not None and not (hardware and session.software) else "cpu"
    report.raster = {"kind": "gl", "hardware_only": hardware, "draws": draws, "ok": not problems, "why": why}
    report.problems += problems


def _judge_encoder(report: NodeReport, config: NodeConfig) -> None:
    """The family the worker's `choose_encoder` would take, and whether it works here."""
    from reelfarm.renderer.backends import EncoderUnavailable, choose_encoder

    nvenc = report.nvenc
    try:
        family = choose_encoder(config.encoder, config.gpu_index).family
    except EncoderUnavailable as exc:
        report.encoder = {"family": "nvenc", "ok": False, "why": "asked for NVENC"}
        report.problems.append(f"NVENC is required but its probe failed: {exc}")
        return
    if family == "nvenc":
        why = "asked for NVENC" if config.encoder == "nvenc" else "auto: an NVENC session opened"
        report.encoder = {"family": "nvenc", "ok": bool(nvenc.get("ok")), "why": why}
        if not nvenc.get("ok"):
            report.problems.append(f"NVENC is required but its probe failed: {nvenc.get('reason')}")
        return
    why = "asked for x264" if config.encoder == "x264" else f"auto: no NVENC ({nvenc.get('reason')})"
    ok = report.speed.get("x264_fps") is not None
    report.encoder = {"family": "x264", "ok": ok, "why": why}
    if not ok:
        report.problems.append(f"x264 failed: {report.speed.get('x264_error')}")


def _judge_queues(report: NodeReport, config: NodeConfig) -> None:
    from reelfarm.farm.runtime.routing import node_queues

    kind = report.raster["draws"]
    work, dropped = node_queues(config.queues, kind)
    if kind == "gl":
        why = "a GL node works render-gpu before render"
    elif report.raster["kind"] == "gl":
        why = "without a GL context the worker would draw on the CPU: never render-gpu"
    else:
        why = "a CPU node works render, never render-gpu"
    if dropped:
        why += f"; dropped {', '.join(dropped)}"
    report.queues = {"asked": list(config.queues), "work": work, "dropped": dropped, "why": why}
    if not work:
        report.problems.append("no queue left to work: render-gpu needs a node that draws with GL")


def check_farm(report: NodeReport, redis_url: str | None, namespace: str) -> None:
    """This host's nodes in the farm's registry; a live one that is set aside is a problem."""
    from reelfarm.farm.runtime.nodes import NodeRegistry, record_speed
    from reelfarm.farm.runtime.wiring import make_redis
    from reelfarm.farm.services.speeds import chunk_rate

    if not redis_url:
        report.farm = {"asked": False}
        return
    try:
        registry = NodeRegistry(make_redis(redis_url), namespace)
        nodes = registry.nodes()
        for node in nodes:  # the measured speed seeds a cold farm's start estimates (``speeds``)
            fps = chunk_rate(report.speed.get(f"{node.get('raster') or 'cpu'}_raster_fps"), report.speed.get("x264_fps"))
            if node["alive"] and node.get("hostname") == report.host["hostname"] and fps:
                record_speed(registry.redis, registry.key(node["name"]), fps)
    except Exception as exc:  # noqa: BLE001 - reported, not a verdict on this machine
        report.farm = {"asked": True, "error": f"the farm's Redis cannot be read: {exc}"}
        return
    keys = ("name", "alive", "state", "set_aside", "failures", "failure", "set_aside_until")
    report.farm = {"asked": True, "nodes": [{k: n.get(k) for k in keys} for n in nodes
                                            if n.get("hostname") == report.host["hostname"]]}
    for node in report.farm["nodes"]:
        if node["alive"] and node["set_aside"]:
            until = time.strftime("%H:%M:%S", time.localtime(float(node["set_aside_until"] or 0)))
            report.problems.append(f"node {node['name']} is set aside by the farm until {until}: {node['failure']}; "
                                   f"once that is fixed, `reelfarm node clear {node['name']}` takes it back")


@click.group("node")
def node_group() -> None:
    """Look at this render node; take one the farm set aside back into work."""


@node_group.command("check")
@click.option("--raster", type=click.Choice(RASTER_KINDS), default="auto", show_default=True,
              envvar="REELFARM_RASTER", show_envvar=True,
              help="The rasterizer the node is configured for (as `reelfarm worker --raster`).")
@click.option("--hardware-gl", is_flag=True,
              help="GL must run on an NVIDIA GPU: software GL (llvmpipe) fails the check. Needs --raster gl.")
@click.option("--encoder", type=click.Choice(ENCODER_KINDS), default="auto", show_default=True,
              envvar="REELFARM_ENCODER", show_envvar=True,
              help="The encoder the node is configured for; nvenc fails the check unless the NVENC probe passes.")
@click.option("--queues", default=DEFAULT_QUEUES, show_default=True,
              help="The queues the worker is given (as `reelfarm worker --queues`).")
@click.option("--quick", is_flag=True, help="One story and short speed runs (about 0.3 s each).")
@click.option("--redis-url", envvar="REELFARM_REDIS_URL", show_envvar=True,
              help="The farm's Redis: this host's nodes there are shown, and one set aside fails the check.")
@click.option("--namespace", default="", help="Prefix of the farm's keys (as given to the workers).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def check_command(raster: str, hardware_gl: bool, encoder: str, queues: str, quick: bool, redis_url: str | None,
                  namespace: str, as_json: bool) -> None:
    """Prove this node: GL against the CPU on every story, NVML, NVENC, speeds, its queues, and
    whether the farm set one of this host's nodes aside (with --redis-url).

    Exits 0 only when the node can serve what it is configured for, 1 when it cannot.
    """
    if hardware_gl and raster != "gl":
        raise click.UsageError("--hardware-gl needs --raster gl")
    names: Sequence[str] = tuple(q.strip() for q in queues.split(",") if q.strip())
    if not names:
        raise click.BadParameter("give at least one queue", param_hint="--queues")
    report = check_node(NodeConfig(raster, encoder, hardware_gl, tuple(names), quick))
    check_farm(report, redis_url, namespace)
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        print_report(report)
    raise SystemExit(0 if report.ok else 1)
