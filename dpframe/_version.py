"""The package version (one place: the package face, releases and exports read it here)."""

__version__ = "0.3.0"
