"""What a workspace's renders used and cost over a period (``GET /usage``)."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from reelfarm.farm.services.costs import GROUPS


class UsageQuerySchema(Schema):
    start = fields.Date(data_key="from", metadata={"description": (
        "the first day (UTC, `YYYY-MM-DD`), included; default: 29 days before `to`"), "example": "2026-03-01"})
    end = fields.Date(data_key="to", metadata={"description": (
        "the last day (UTC, `YYYY-MM-DD`), included; default: today. At most 366 days from `from`"),
        "example": "2026-03-31"})
    group_by = fields.String(validate=validate.OneOf(GROUPS), metadata={
        "description": "also break the totals down by `day` (UTC) or by `video`"})


class _Figures(Schema):
    renders = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "renders created (an identical request answered with an existing render creates none)"})
    frames_rendered = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "frames the farm drew and encoded for them (each chunk once, however often it was tried)"})
    frames_reused = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "frames reused from segments earlier renders had made"})
    cpu_sec = fields.Float(required=True, validate=validate.Range(min=0), metadata={
        "description": "CPU seconds their tasks used on the farm's nodes, every attempt counted"})
    gpu_sec = fields.Float(required=True, validate=validate.Range(min=0), metadata={
        "description": "seconds their tasks held a GPU (0 when all ran on CPU nodes)"})
    storage_bytes = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "bytes their tasks stored (segments, stream parts, videos, posters)"})
    credits = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "credits charged for them, less those refunded (failed and canceled renders)"})


class UsageGroupSchema(_Figures):
    day = fields.String(metadata={"format": "date", "description": "with `group_by=day`: the day (UTC)"})
    video_id = fields.String(metadata={"format": "uuid", "description": "with `group_by=video`: the video"})


class UsageSchema(_Figures):
    start = fields.Date(required=True, attribute="from", data_key="from", metadata={"description": "the first day counted (UTC)"})
    end = fields.Date(required=True, attribute="to", data_key="to", metadata={"description": "the last day counted (UTC)"})
    group_by = fields.String(required=True, allow_none=True, validate=validate.OneOf(GROUPS))
    groups = fields.List(fields.Nested(UsageGroupSchema), required=True, allow_none=True, metadata={"description": (
        "with `group_by`: one entry a day or video that had any, in order of day or video id; null without")})


class RenderEstimateSchema(Schema):
    format = fields.String(required=True, metadata={"description": "the format estimated"})
    existing_render_id = fields.String(required=True, allow_none=True, metadata={"format": "uuid", "description": (
        "an identical render already finished or in flight: asking would answer it, at no cost; null otherwise")})
    frames_to_render = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "frames the farm would draw (0 when `existing_render_id` names an identical render)"})
    frames_reused = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "frames copied from segments the workspace's earlier renders made: they cost nothing"})
    cpu_sec = fields.Float(required=True, validate=validate.Range(min=0), metadata={"description": (
        "CPU seconds the farm's nodes would spend on the frames to render and the stitch")})
    wall_sec = fields.Float(required=True, validate=validate.Range(min=0), metadata={"description": (
        "seconds its tasks would run, summed as the Render's `cost` sums them (chunks run side by side: "
        "not the time to wait)")})
    credits = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "credits asking would charge (0 when the version is paid or the render exists)"})
    node_kind = fields.String(required=True, validate=validate.OneOf(("cpu", "gl")), metadata={
        "description": "the kind of node the figures are for: the kind that drew most recent chunks (`gl`: a GPU)"})
    basis = fields.String(required=True, validate=validate.OneOf(("measured", "baseline", "identical_render")),
                          metadata={"description": (
        "`measured`: the model scaled by the farm's recent chunks of this resolution (`sampled_frames` of "
        "them); `baseline`: the built-in model, the farm having measured none; `identical_render`: see "
        "`existing_render_id`")})
    sampled_frames = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "the frames of recent chunks the figures were calibrated on"})


class VariantsEstimateSchema(Schema):
    frames_to_render = fields.Integer(required=True, validate=validate.Range(min=0))
    frames_reused = fields.Integer(required=True, validate=validate.Range(min=0))
    cpu_sec = fields.Float(required=True, validate=validate.Range(min=0))
    wall_sec = fields.Float(required=True, validate=validate.Range(min=0))
    credits = fields.Integer(required=True, validate=validate.Range(min=0), metadata={
        "description": "credits asking would charge, once for all the formats"})
    renders = fields.List(fields.Nested(RenderEstimateSchema), required=True, metadata={
        "description": "each format's estimate, in the order asked (a repeated format once)"})
