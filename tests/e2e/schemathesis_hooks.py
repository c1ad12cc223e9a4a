"""Schemathesis hooks for the contract fuzz (loaded through ``SCHEMATHESIS_HOOKS``).

Every generated request that carries a well-formed ``Idempotency-Key`` gets a fresh one: the
fuzzer sends many different bodies, and reusing a key with another body is, by contract, a 422
(``idempotency_key_mismatch``), which is tested on its own. Malformed keys are left as generated,
so the negative cases still test their rejection.
"""
from __future__ import annotations

import re
import uuid

import schemathesis

_VALID_KEY = re.compile(r"[\x20-\x7e]{1,255}")


@schemathesis.hook
def before_call(ctx, case, kwargs):  # noqa: ANN001, ANN201 - the hook's signature
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str) and _VALID_KEY.fullmatch(headers[name]):
            headers[name] = f"fuzz-{uuid.uuid4()}"
