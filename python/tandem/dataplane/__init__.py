"""The emulated switch data plane: the Rust OpenFlow 1.3 + POF pipeline
(``crates/dp-core``) behind a rule-IR ``Switch``."""

from .switch import DataplaneError, Fates, Switch, Trace

__all__ = ["DataplaneError", "Fates", "Switch", "Trace"]
