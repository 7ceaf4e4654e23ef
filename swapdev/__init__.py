"""The latency-injection remote-memory device (paper §3.1) and its run harness.

The device itself is C (``swapdev/core``, ``swapdev/src``; built into ``build/swapdev`` by
``make build``); :mod:`disaggsim.swapdev.device` sets it up on the machine, runs workloads
on it and reads its outputs.
"""
