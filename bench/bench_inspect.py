"""`systolic inspect` speed and memory (not a test): CPU, wall time and peak RSS of one run.

Runs `systolic inspect MODEL` (default: the onnx wheel's light VGG-19,
onnx/backend/test/data/light/light_vgg19.onnx) in a fresh process `--repeat` times and prints
each run's CPU seconds (user + system: page faults of large arrays are system time), wall
seconds and peak resident memory (the child's ru_maxrss), then the smallest of each. With
`--where`, one more run in this process samples its RSS every 2 ms and prints where the
program was each time the RSS moved by more than 40 MB (the innermost systolic frames), so
the peak can be attributed to a pass.

    python bench/bench_inspect.py [--model PATH] [--repeat 3] [--where]
"""

import argparse
import contextlib
import io
import os
import resource
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import onnx

MODEL = Path(onnx.__file__).parent / "backend/test/data/light/light_vgg19.onnx"


def one_run(model: Path) -> tuple[float, float, float]:
    """Return (CPU s, wall s, peak RSS in MB) of `systolic inspect model` in a new process."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "systolic.commands.cli", "inspect",
                              str(model)], stdout=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"inspect failed with exit status {child.returncode}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1000


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def where(model: Path) -> None:
    """Run inspect in this process and print the RSS each time it moves by over 40 MB."""
    from systolic.commands.cli import main

    main_thread, last, finished = threading.get_ident(), [0], threading.Event()

    def sample() -> None:
        while not finished.is_set():
            rss = _rss()
            if abs(rss - last[0]) > 40e6:
                frame = sys._current_frames().get(main_thread)
                stack = [f"{entry.filename.split('/')[-1]}:{entry.lineno} {entry.name}"
                         for entry in traceback.extract_stack(frame)
                         if "systolic" in entry.filename or "mapper" in entry.filename]  # fmt: skip
                print(f"  {rss / 1e6:7.0f} MB  {' < '.join(reversed(stack[-3:]))}",
                      file=sys.__stdout__)
                last[0] = rss
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with contextlib.redirect_stdout(io.StringIO()):
        main(["inspect", str(model)])
    finished.set()
    sampler.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--where", action="store_true")
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        runs.append(one_run(args.model))
        print(f"inspect {args.model.name}: {runs[-1][0]:.2f} s CPU, {runs[-1][1]:.2f} s wall, "
              f"peak RSS {runs[-1][2]:.0f} MB", flush=True)  # fmt: skip
    print(f"smallest of {args.repeat}: {min(r[0] for r in runs):.2f} s CPU, "
          f"{min(r[1] for r in runs):.2f} s wall, peak RSS {min(r[2] for r in runs):.0f} MB")
    if args.where:
        print("RSS while inspecting (moves over 40 MB):")
        where(args.model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
