"""Map the top-level source folders into the single `systolic` import namespace.

`systolic/` is the package itself; `hdl/`, `mapper/`, `sim/` and `proto/` become
`systolic.hdl`, `systolic.mapper`, `systolic.sim` and `systolic.proto`. Every folder below
them that has an `__init__.py` is a subpackage. All other metadata lives in pyproject.toml.

`systolic/hdl`, `systolic/mapper`, `systolic/sim` and `systolic/proto` are symbolic links to
those folders, so that tools which walk the package on disk (mypy, import-linter, editors) see
the installed layout in the source tree; packages are still found from the real folders.
"""

from setuptools import find_packages, setup

PACKAGE_FOLDERS = {
    "systolic": "systolic",
    "systolic.hdl": "hdl",
    "systolic.mapper": "mapper",
    "systolic.sim": "sim",
    "systolic.proto": "proto",
}
LINKED = [name.split(".")[1] for name in PACKAGE_FOLDERS if "." in name]


def _all_packages() -> list[str]:
    packages = []
    for package, folder in PACKAGE_FOLDERS.items():
        packages.append(package)
        excluded = [f"{link}{tail}" for link in LINKED for tail in ("", ".*")]
        excluded = excluded if folder == "systolic" else []
        packages.extend(f"{package}.{sub}" for sub in find_packages(folder, exclude=excluded))
    return packages


setup(packages=_all_packages(), package_dir=PACKAGE_FOLDERS)
