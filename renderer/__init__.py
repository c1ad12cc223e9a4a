"""reelfarm's renderer: VideoDoc in, pixels and MP4 bytes out.

A pure library: it imports nothing of the service (no web framework, queue, database or
storage). Any frame is computed from (doc, t) alone, which is what lets the farm cut a video
into chunks rendered on different machines.

Names are imported from the module that defines them (``from reelfarm.renderer.render import
render_video``); importing the package itself loads nothing, and a command pays only for the
modules it touches (a still never loads PyAV, a lint never loads an encoder).

| module | what |
|---|---|
| ``spec`` | formats, resolutions, frame rates; ``RenderSpec``, ``frame_size``, ``spec_problems`` |
| ``chunks`` | how a video is cut into chunks (``scene_chunks`` for the farm, ``plan_chunks`` on one machine) |
| ``model`` | the VideoDoc: ``parse_doc``, ``Doc``, ``doc_schema`` |
| ``linter`` | ``lint``: errors that stop a render, warnings that advise |
| ``raster`` / ``gl`` / ``backends`` | Skia on the CPU, Skia on GL (EGL), and the choice between them |
| ``encode`` / ``nvenc`` | H.264 with x264 (PyAV) or NVENC (PyNvVideoCodec) |
| ``encode_web`` | the other containers: VP9 (with alpha) and Opus for WebM, one-palette animated GIFs |
| ``render`` | ``render_segment``, ``render_video``, ``finish_video`` (concat and audio) |
| ``stills`` | PNG stills and JPEG posters |
| ``captions`` / ``caption_layout`` | cues read from SRT and WebVTT (line-numbered errors) and written as WebVTT; how they are drawn and linted |
| ``audio`` / ``soundtrack`` | the audio mix (whole or any span of it) and AAC; how a track loops or fades to fit |
| ``assets`` / ``fonts`` / ``text`` / ``tokens`` | images and audio, packaged fonts, text layout, brand tokens |
| ``footage`` | video clips: the clip frame shown at an instant, decoded by seeking to a keyframe and forward |
| ``errors`` | ``RendererError`` and its kinds (``DocInvalid``, ``AssetError``, ``FontError``, ...) |
"""
from __future__ import annotations

RENDERER_VERSION = "1.1.0"  # 1.1: an audio track loops or fades to fit the video (``soundtrack``)
