"""Tandem: a host and its SmartNICs as one packet-processing machine."""

__version__ = "0.1.0"
