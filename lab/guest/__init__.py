"""Kernel SCTP guest: image builder and qemu harness."""
