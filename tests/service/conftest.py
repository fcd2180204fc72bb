"""Service test fixtures (helpers live in ``support.py``)."""

from __future__ import annotations

import pytest

from mast_otel.processors.config import ProcessorConfig
from tests.service.support import make_config


@pytest.fixture
def config(tmp_path) -> ProcessorConfig:
    return make_config(tmp_path)
