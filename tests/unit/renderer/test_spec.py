"""What to render: one definition of formats, sizes and rates, and a spec that cannot be invalid."""
from __future__ import annotations

import dataclasses

import pytest

from reelfarm.renderer.errors import SpecInvalid
from reelfarm.renderer.spec import FORMATS, FPS_CHOICES, RESOLUTIONS, RenderSpec, spec_problems


def test_a_spec_knows_its_pixel_size_and_frame_times():
    spec = RenderSpec("4:5", 1080, 24)
    assert spec.size == (spec.width, spec.height) == (1080, 1350)
    assert spec.time(48) == 2.0
    assert spec.as_dict() == {"format": "4:5", "resolution": 1080, "fps": 24}


def test_a_spec_lists_every_problem_at_once():
    with pytest.raises(SpecInvalid) as error:
        RenderSpec("5:4", 8, 0)
    assert [(p.pointer, p.code) for p in error.value.problems] == [
        ("/format", "invalid_choice"), ("/resolution", "out_of_range"), ("/fps", "out_of_range")]
    assert "16:9, 9:16, 1:1, 4:5" in str(error.value)


@pytest.mark.parametrize("resolution", [True, 1080.0, "1080", 15, 4321])
def test_resolutions_are_whole_pixels_within_the_renderers_limits(resolution):
    assert [p.pointer for p in spec_problems(resolution=resolution)] == ["/resolution"]


def test_values_not_given_are_not_checked():
    assert spec_problems() == [] and spec_problems(fmt="1:1") == []
    assert [p.pointer for p in spec_problems(fps=121)] == ["/fps"]


def test_the_published_choices_lie_within_what_can_be_rendered():
    for fmt in FORMATS:
        for resolution in RESOLUTIONS:
            for fps in FPS_CHOICES:
                width, height = RenderSpec(fmt, resolution, fps).size
                assert width % 2 == 0 and height % 2 == 0 and min(width, height) == resolution


def test_a_spec_is_frozen_and_hashable():
    spec = RenderSpec("16:9")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.fps = 60  # type: ignore[misc]
    assert {spec, RenderSpec("16:9", 1080, 30)} == {spec}
