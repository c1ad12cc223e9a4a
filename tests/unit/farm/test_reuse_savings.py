"""What reuse saved over a period: the reused frames' share and their CPU priced at the period's
CPU a drawn frame; nothing to price them by when no frame was drawn."""
from __future__ import annotations

from reelfarm.farm.services.usage import reuse_savings


def _figures(rendered: int, reused: int, cpu: float) -> dict[str, float]:
    return {"frames_rendered": rendered, "frames_reused": reused, "cpu_sec": cpu}


def test_reused_frames_are_priced_at_the_periods_cpu_a_drawn_frame():
    assert reuse_savings(_figures(240, 300, 17.5)) == {"frames": 300, "share": 300 / 540, "cpu_ms_per_frame": 72.9,
                                                       "cpu_sec": 21.9}


def test_without_a_drawn_frame_there_is_no_price_and_without_frames_no_share():
    assert reuse_savings(_figures(0, 180, 0.3)) == {"frames": 180, "share": 1.0, "cpu_ms_per_frame": None,
                                                    "cpu_sec": None}
    assert reuse_savings(_figures(0, 0, 0.0)) == {"frames": 0, "share": 0.0, "cpu_ms_per_frame": None,
                                                  "cpu_sec": None}
