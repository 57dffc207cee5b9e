"""The sync tests' fixtures ``hub_root`` and ``hub`` live in tests/sync_hub.py (the browser
tests use them too), registered by tests/conftest.py."""
