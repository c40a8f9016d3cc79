"""Which graph nodes need an optional STORE-side unit (`ArrayConfig.without`).

A node whose unit the configuration omits runs on the host, with `absent_message`'s words as
its reason (docs/mapper.md, "Optional units"): SOFTMAX and LAYERNORM need the
row-normalisation unit, a QTable the activation table (standalone, TABLE + COPY `lut`, or
fused into an array layer's STOREs, `may_fuse_tables`).
"""

from systolic.config import ArrayConfig, OptionalUnit
from systolic.config_units import absent_message
from systolic.ir import SYSTOLIC_DOMAIN, Node

__all__ = ["UNIT_OF_OP", "absent_unit_reason", "may_fuse_tables"]

UNIT_OF_OP = {
    "QSoftmax": OptionalUnit.ROW_UNIT,
    "QLayerNorm": OptionalUnit.ROW_UNIT,
    "QTable": OptionalUnit.TABLES,
}
"""The optional unit each systolic-domain vector operator needs."""


def absent_unit_reason(node: Node, config: ArrayConfig) -> str | None:
    """Return why `node` cannot run on an accelerator of `config` because its unit is omitted
    ("the accelerator is configured without its row-normalisation unit (--without
    row-unit)"), or None when its unit is built or it needs none."""
    unit = UNIT_OF_OP.get(node.op_type) if node.domain == SYSTOLIC_DOMAIN else None
    if unit is None or config.has(unit):
        return None
    return absent_message(unit)


def may_fuse_tables(config: ArrayConfig) -> bool:
    """True when a QTable may become the `lut` of an array layer's STOREs: the
    configuration has its activation table."""
    return config.has(OptionalUnit.TABLES)
