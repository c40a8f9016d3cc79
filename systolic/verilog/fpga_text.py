"""The text `systolic verilog --fpga PART` prints for an `FpgaResult` (as a dict)."""

from typing import Any

__all__ = ["render_fpga"]

_LABELS = {"luts": "LUTs", "flip_flops": "flip-flops", "dsps": "DSP blocks",
           "brams": "block RAMs"}


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{seconds:.0f} s"


def _resource_rows(result: dict[str, Any]) -> list[str]:
    rows = [f"  {'resource':<11} {'used':>9} {'available':>10} {'use':>5}"]
    for name, label in _LABELS.items():
        counts = result["resources"][name]
        used, available = counts["used"], counts["available"]
        share = f"{100 * used / available:.0f}%" if available else "-"
        note = ""
        if name == "flip_flops" and result["fits"]:
            note = f"  (with the harness's I/O chains: {result['harness_flip_flops']:,} bits)"
        rows.append(f"  {label:<11} {used:>9,} {available:>10,} {share:>5}{note}")
    return rows


def _timing_rows(result: dict[str, Any]) -> list[str]:
    fmax, target = result["fmax_mhz"], result["target_mhz"]
    verdict = "met" if fmax is not None and fmax >= target else "missed"
    rows = [f"  Fmax        {fmax:.2f} MHz (constraint {target:.2f} MHz: {verdict})"]
    path = result["critical_path"]
    if path is not None:
        rows.append(f"  critical path {path['delay_ns']:.2f} ns ({path['logic_ns']:.2f} ns "
                    f"in cells): {path['start']} -> {path['end']}")
    return rows


def _shortfall_rows(result: dict[str, Any]) -> list[str]:
    rows = ["  does not fit:"]
    for item in result["shortfall"]:
        label = _LABELS.get(item["resource"], item["resource"])
        rows.append(f"    {label}: {item['used']:,} needed, {item['available']:,} available "
                    f"({item['over']:,} over)")
    return rows


def _component_rows(result: dict[str, Any]) -> list[str]:
    components = result.get("components")
    if not components:
        return []
    total = sum(row["logic"] for row in components.values()) or 1
    header = (f"  by unit (Yosys' cells before packing): {'logic':>8} {'share':>6} "
              f"{'flip-flops':>10} {'DSP':>4} {'BRAM':>4}")
    rows = [header]
    for unit, row in components.items():
        rows.append(f"    {unit:<36} {row['logic']:>8,} {100 * row['logic'] / total:>5.1f}% "
                    f"{row['flip_flops']:>10,} {row['dsps']:>4} {row['brams']:>4}")
    return rows


def render_fpga(result: dict[str, Any]) -> str:
    """Return the FPGA section of `systolic verilog`'s text output."""
    seconds = result["phase_seconds"]
    phases = ", ".join(f"{name.replace('_', ' ')} {_duration(value)}"
                       for name, value in seconds.items())
    source = "cached" if result["cached"] else phases
    tools = ", ".join(f"{name} {version}" for name, version in result["tools"].items())
    lines = [
        f"FPGA {result['part']} ({result['device']}; {tools}; {source}):",
        f"  synthesis: {result['synthesis']}",
        *_resource_rows(result),
    ]
    lines += _timing_rows(result) if result["fits"] else _shortfall_rows(result)
    lines += _component_rows(result)
    lines.append(f"  logs and nextpnr's report: {result['cache_folder']}")
    return "\n".join(lines) + "\n"
