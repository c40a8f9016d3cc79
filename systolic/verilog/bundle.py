"""The output folder of `systolic verilog`: Verilog, lint waivers, Yosys script, README.

`render_bundle(config)` returns the files as text (deterministic: the same configuration gives
the same bytes). `write_bundle` writes them into a staging folder next to the destination, runs
the optional checks there, and only then moves the files into place, so an error leaves the
destination as it was: either every file of the new bundle is there or none.
"""

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from systolic.config import ArrayConfig
from systolic.errors import ConfigError
from systolic.hdl.emit import build_accelerator, component_ports, to_verilog, top_name
from systolic.verilog.lint import LINT_CONFIG
from systolic.verilog.readme import render_readme
from systolic.verilog.synth import synth_script

__all__ = ["Bundle", "render_bundle", "write_bundle"]


@dataclasses.dataclass(frozen=True)
class Bundle:
    """The files of one configuration: `files` maps file names to their text."""

    top: str
    verilog_name: str
    lint_name: str
    synth_name: str
    files: dict[str, str]


def render_bundle(config: ArrayConfig) -> Bundle:
    """Elaborate the accelerator for `config` and return its files."""
    top = top_name(config)
    names = (f"{top}.v", f"{top}.vlt", f"{top}.ys")
    component = build_accelerator(config)
    ports, constants = component_ports(component)
    verilog_text = to_verilog(component, top)
    readme = render_readme(
        config, top, ports, constants,
        verilog_name=names[0], lint_name=names[1], synth_name=names[2],
    )
    files = {
        names[0]: verilog_text,
        names[1]: LINT_CONFIG,
        names[2]: synth_script(names[0], top),
        "README.md": readme,
    }
    return Bundle(top, *names, files=files)


def write_bundle(bundle: Bundle, output: str | os.PathLike[str],
                 check: Callable[[Path], None] | None = None) -> Path:
    """Write `bundle` into folder `output` (created if needed) and return its path.

    `check(staging_folder)` runs after the files are written to the staging folder and before
    they are moved; if it (or anything else) raises, nothing reaches `output`. Other files
    already in `output` are left alone.
    """
    target = Path(output)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"-o {str(output)!r} is a file: give a folder for the Verilog files")
    parent = target.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name or 'verilog'}.", dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # a folder made here should look like one made by mkdir
    try:
        for name, text in bundle.files.items():
            (staging / name).write_text(text, encoding="utf-8")
        if check is not None:
            check(staging)
        extra = set(os.listdir(staging)) - set(bundle.files)
        for name in extra:  # anything a check left behind (it should leave nothing)
            (staging / name).unlink()
        if not target.exists():
            os.rename(staging, target)  # the whole folder appears at once
            return target
        for name in bundle.files:
            os.replace(staging / name, target / name)
        staging.rmdir()
        return target
    finally:
        if staging.exists():
            shutil.rmtree(staging)
