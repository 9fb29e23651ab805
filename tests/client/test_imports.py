"""What ``import deniable.client`` loads, and that its public names all resolve.

The import is kept light by importing heavy modules where they are first needed
(benchmarks/client.py measures the time; here only which modules load, which is
deterministic): no mechanism, no survey, no cryptography, no requests, no numpy.
"""

from __future__ import annotations

import json
import subprocess
import sys

import deniable.client

# The public API: a name may be added, never silently dropped.
PUBLIC = {
    "AlreadyAnswered",
    "BudgetExceeded",
    "ClientError",
    "DeniableError",
    "DeviceState",
    "EnrolmentTokenRequired",
    "FlushResult",
    "InvalidParameter",
    "InvalidValue",
    "Ledger",
    "Policy",
    "PolicyViolation",
    "Receipt",
    "SignatureError",
    "StateError",
    "StateStore",
    "SurveyClient",
    "SurveyClosed",
    "TransportError",
    "VerifiedSurvey",
}

# Loaded later, by the first survey, signature check, state read or answer.
NOT_LOADED = [
    "numpy",
    "requests",
    "cryptography",
    "deniable.survey",
    "deniable.mechanisms",
    "deniable.keychain",
    "deniable.canonical",
    "rfc8785",
    "fractions",
    "hashlib",
    "uuid",
]

# What the import adds to what the interpreter (site, a coverage hook...) already loaded.
SCRIPT = """
import sys
before = set(sys.modules)
import deniable.client
import json
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_every_public_name_resolves() -> None:
    assert PUBLIC <= set(deniable.client.__all__)
    namespace: dict[str, object] = {}
    exec("from deniable.client import *", namespace)  # noqa: S102 - the star import itself
    for name in deniable.client.__all__:
        assert namespace[name] is getattr(deniable.client, name)
        assert getattr(namespace[name], "__name__", name) == name


def test_import_loads_no_heavy_module() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(json.loads(result.stdout))
    assert "deniable.client.session" in loaded  # the check would mean nothing otherwise
    heavy = {m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_LOADED)}
    assert not heavy, f"import deniable.client loaded {sorted(heavy)}"


def test_the_lazy_imports_happen_when_needed() -> None:
    # Building a policy and checking a survey loads the mechanisms after all.
    script = """
import json, sys
from deniable.client import Policy
before = "deniable.mechanisms" in sys.modules
policy = Policy()
print(json.dumps([before, "deniable.mechanisms" in sys.modules, sorted(policy.allowed_mechanisms)]))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    before, after, allowed = json.loads(result.stdout)
    from deniable.mechanisms import MECHANISMS

    assert (before, after) == (False, True)
    assert allowed == sorted(MECHANISMS)
