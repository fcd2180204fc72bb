"""Shared parts of the session corpus recorders."""
