"""The lab tests' shared smoke-profile repository: one per session, so each smoke campaign is
collected once (tests/integration/lab_campaign.py)."""

import pytest

from tests.integration.lab_campaign import SmokeRepo


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory) -> SmokeRepo:
    return SmokeRepo(tmp_path_factory.mktemp("repo"))
