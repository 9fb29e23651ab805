"""``import deniable``: the prelude names resolve, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import deniable


@pytest.mark.parametrize("name", [n for n in deniable.__all__ if n != "__version__"])
def test_every_prelude_name_resolves_to_its_module_definition(name):
    value = getattr(deniable, name)
    module = sys.modules[deniable._PRELUDE[name]]
    assert getattr(module, name) is value
    assert name in dir(deniable)


def test_all_lists_exactly_the_prelude():
    assert sorted(deniable.__all__) == sorted(["__version__", *deniable._PRELUDE])


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        deniable.nothing_here  # noqa: B018


def test_import_deniable_loads_no_numpy_until_an_estimator_is_asked_for():
    code = (
        "import sys, deniable; "
        "assert 'numpy' not in sys.modules; "
        "deniable.GRR(epsilon=1.0, domain_size=3).randomize(0); "
        "assert 'numpy' not in sys.modules; "
        "deniable.estimate_frequencies; "
        "assert 'numpy' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
