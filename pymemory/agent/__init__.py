"""Agent primitives from seeds 000, 001 and 004, all on the core KvBackend."""
