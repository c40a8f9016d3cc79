"""The API's docstring examples run as tests (the bundled LeNet on the `model` backend)."""

import doctest
import importlib
import pkgutil

import pytest

import systolic.api

MODULES = ["systolic.api"] + [
    f"systolic.api.{info.name}" for info in pkgutil.iter_modules(systolic.api.__path__)
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_every_public_function_and_report_has_an_example() -> None:
    examples = {
        test.name.rsplit(".", 1)[-1]
        for name in MODULES
        for test in doctest.DocTestFinder().find(importlib.import_module(name))
        if test.examples
    }
    assert {"compiling", "loading", "simulating", "sweeping", "table"} <= examples
