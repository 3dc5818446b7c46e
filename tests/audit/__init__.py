"""The privacy audit of dpframe (docs/audit.md): scenarios that run every aggregate and
mechanism on worst-case neighbouring datasets through :func:`dpframe.testing.audit_release`,
and deliberately broken releases the audit must catch (``_controls``).

Run by ``tests/test_audit.py`` (``pytest -m audit``, ``pytest -m audit_full``) and by
``python tools/update_audit_table.py``, which writes the table of docs/audit.md.
"""

from .catalogue import SCENARIOS, scenario
from .scenario import Scenario

__all__ = ["SCENARIOS", "Scenario", "scenario"]
