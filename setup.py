"""Map the top-level source folders into the single `systolic` import namespace.

`systolic/` is the package itself; `hdl/`, `mapper/`, `sim/` and `proto/` become
`systolic.hdl`, `systolic.mapper`, `systolic.sim` and `systolic.proto`. Every folder below
them that has an `__init__.py` is a subpackage. All other metadata lives in pyproject.toml.
"""

from setuptools import find_packages, setup

PACKAGE_FOLDERS = {
    "systolic": "systolic",
    "systolic.hdl": "hdl",
    "systolic.mapper": "mapper",
    "systolic.sim": "sim",
    "systolic.proto": "proto",
}


def _all_packages() -> list[str]:
    packages = []
    for package, folder in PACKAGE_FOLDERS.items():
        packages.append(package)
        packages.extend(f"{package}.{sub}" for sub in find_packages(folder))
    return packages


setup(packages=_all_packages(), package_dir=PACKAGE_FOLDERS)
