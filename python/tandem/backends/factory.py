"""Backend by name. A module above ``base`` and its subclasses, so that ``base``
never imports the backends built on it (no import cycle)."""

from __future__ import annotations

from tandem.backends.base import Backend, BackendError

BACKENDS = ("ovs", "emu", "fake")


def make_backend(name: str, **options: object) -> Backend:
    """Backend by name: ``ovs``, ``emu`` or ``fake``. Each is imported only when
    asked for (``ovs`` needs no Rust extension, ``emu`` no OVS)."""
    if name == "ovs":
        from tandem.backends.ovs import OvsBackend

        return OvsBackend(**options)  # type: ignore[arg-type]
    if name == "fake":
        from tandem.backends.fake import FakeBackend

        return FakeBackend(**options)  # type: ignore[arg-type]
    if name == "emu":
        from tandem.backends.emu import EmuBackend

        return EmuBackend(**options)  # type: ignore[arg-type]
    raise BackendError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
