"""The compiled schema check says "valid" exactly when jsonschema finds no problem.

``schema_problems`` trusts jsonschema-rs's yes and asks jsonschema only for the messages of a no,
so the two must agree: every built-in story in every format, and the same documents broken at
sampled places with values of every JSON type and some near-misses."""
from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import pytest

from reelfarm.renderer.model import _fast_validator, _validator, schema_problems
from reelfarm.renderer.tokens import NEUTRAL_BRAND
from reelfarm.studio.stories import list_stories

VALUES = (None, "x", -1, 1.5, 0, [], {}, True, "#12345", "http://a b", 10**9)


def paths(node: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from paths(child, path + (key,))


def with_value(doc: dict, path: tuple, value: Any) -> dict:
    broken = copy.deepcopy(doc)
    node = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return broken


@pytest.mark.parametrize("story", list_stories(), ids=lambda s: s.id)
def test_the_compiled_check_agrees_with_jsonschema(story):
    fast, slow = _fast_validator(), _validator()
    for fmt in ("16:9", "9:16", "1:1", "4:5"):
        doc = story.build({}, NEUTRAL_BRAND, fmt, None)
        assert fast.is_valid(doc) and schema_problems(doc) == []
    rng = random.Random(story.id)
    for path in rng.sample(list(paths(doc))[1:], 3):
        for value in VALUES:
            broken = with_value(doc, path, value)
            assert fast.is_valid(broken) == (next(slow.iter_errors(broken), None) is None), (path, value)
            if not fast.is_valid(broken):
                assert schema_problems(broken)
