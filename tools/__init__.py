"""Test and developer tools (not part of the package)."""
