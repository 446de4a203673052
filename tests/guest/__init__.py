"""Kernel SCTP guest tests and node-parser checks against its golden outputs."""
