"""Shared pytest setup: GPU tests skip cleanly (one line saying why) without a CUDA driver."""
import pytest

from helpers import gpu_unavailable_reason


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
