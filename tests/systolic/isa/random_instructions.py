"""Random instructions with every field valid (for encoding tests), seeded by the caller."""

import dataclasses
import enum

import numpy as np

from systolic.isa.instructions import Instruction, Load, LoadTarget, Pool, PoolMode


def _value(field, rng: np.random.Generator) -> object:
    if field.kind is bool:
        return bool(rng.integers(2))
    if issubclass(field.kind, enum.Enum):
        return list(field.kind)[rng.integers(len(field.kind))]
    choice = rng.integers(4)
    if choice == 0:
        return field.minimum
    if choice == 1:
        return field.maximum
    if choice == 2:  # a small value: the common case
        return int(min(field.maximum, field.minimum + rng.integers(0, 16)))
    return int(rng.integers(field.minimum, field.maximum, endpoint=True))


def random_instruction(cls: type[Instruction], rng: np.random.Generator) -> Instruction:
    """Return an instance of `cls` whose fields span their whole encodable ranges."""
    values = {field.name: _value(field, rng) for field in cls.FIELDS}
    if "lo" in values:
        values["lo"], values["hi"] = sorted((values["lo"], values["hi"]))
    if cls is Load:
        if values["mem"] is LoadTarget.PARAMS:
            for name in ("k0", "length", "run", "n_mid", "stride_mid", "stride_outer"):
                values[name] = 0
            values["flip_sign"] = False
        else:
            for name in ("length", "run", "n_mid"):
                values[name] = max(values[name], 1)
    if cls is Pool:
        if values["mode"] is PoolMode.MAX:
            for name in ("multiplier", "shift", "zp_in", "zp_out"):
                values[name] = 0
        for pad, k, s, out, size in (
            ("pad_top", "kh", "sh", "oh", "h"),
            ("pad_left", "kw", "sw", "ow", "w"),
        ):
            low = (values[out] - 1) * values[s] - values[size] + 1
            high = values[k] - 1
            if low > high or low > 32767:
                values[out] = 1
                low = 1 - values[size]
            low, high = max(low, -32768), min(high, 32767)
            values[pad] = int(rng.integers(low, high, endpoint=True))
    instance = cls(**values)
    assert {f.name for f in dataclasses.fields(instance)} == set(values)
    return instance
