"""tandem.model — the typed scenario (one source of truth) and its loader.

``load_scenario(path)`` reads a YAML scenario and returns a frozen ``Scenario``
or raises ``ScenarioError`` (``.problems``: list of (yaml_path, message)).
Schema in ``scenario.py``, units in ``units.py``, cross-reference checks in
``checks.py``, the ``tandem validate`` / ``tandem demo`` commands in ``cli.py``.
"""

from tandem.model.load import ScenarioError, ScenarioFileError, load_scenario, parse_scenario_text
from tandem.model.scenario import Scenario

__all__ = ["Scenario", "ScenarioError", "ScenarioFileError", "load_scenario", "parse_scenario_text"]
