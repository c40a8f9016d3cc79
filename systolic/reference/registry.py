"""The versioned operator registry: which (domain, op_type, since_version) the tool implements.

Operators are listed explicitly in `systolic.reference.ops.ALL_OPS`; nothing is discovered
by scanning folders. A node binds to the highest since_version not above the opset version
its model imports for the node's domain ("" and "ai.onnx" are the same domain).
"""

from functools import cache

from systolic.reference.ops.base import Op

__all__ = ["SUPPORTED_OPSETS", "canonical_domain", "resolve", "versions_of"]

SUPPORTED_OPSETS: dict[str, tuple[int, int]] = {
    "": (1, 23),
    "com.microsoft": (1, 1),
    "systolic": (1, 1),
}
"""For each domain, the lowest and highest opset version a model may import."""


def canonical_domain(domain: str) -> str:
    """Return "" for the default ONNX domain (written "" or "ai.onnx"), else `domain`."""
    return "" if domain in ("", "ai.onnx") else domain


@cache
def _table() -> dict[tuple[str, str], list[tuple[int, type[Op]]]]:
    from systolic.reference.ops import ALL_OPS

    table: dict[tuple[str, str], list[tuple[int, type[Op]]]] = {}
    for cls in ALL_OPS:
        key = (cls.domain, cls.op_type)
        for version in cls.since_versions:
            table.setdefault(key, []).append((version, cls))
    for entries in table.values():
        entries.sort(key=lambda entry: entry[0])
        versions = [v for v, _ in entries]
        if len(set(versions)) != len(versions):
            raise RuntimeError(f"operator registered twice at one version: {entries}")
    return table


def versions_of(domain: str, op_type: str) -> list[int]:
    """Return the since_versions the tool implements for an operator, ascending."""
    return [v for v, _ in _table().get((canonical_domain(domain), op_type), [])]


def resolve(domain: str, op_type: str, opset_version: int) -> tuple[int, type[Op]] | None:
    """Return (since_version, class) for an operator in a model importing `opset_version` of
    its domain, or None when no implemented version is at or below it."""
    best = None
    for version, cls in _table().get((canonical_domain(domain), op_type), []):
        if version <= opset_version:
            best = (version, cls)
    return best
