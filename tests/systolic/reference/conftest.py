"""Report the onnxruntime comparisons `ort_oracle.check_ort` left out: inputs whose uint8 x
int8 pair sums this CPU's onnxruntime saturates (those are compared with the specification)."""

import pytest

try:
    from .ort_oracle import SKIPPED
except ImportError:  # onnx or onnxruntime not installed: nothing is compared with onnxruntime
    SKIPPED = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SKIPPED:
        terminalreporter.write_line(
            f"onnxruntime: {len(SKIPPED)} comparisons left out (this CPU's onnxruntime "
            "saturates uint8 x int8 int16 pair sums on those inputs); the ONNX specification "
            "was compared instead"
        )
