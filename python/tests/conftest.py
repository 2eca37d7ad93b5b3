"""Fixtures: a fresh database directory and an open database per test."""

import pytest

import mezzanine


@pytest.fixture
def db(tmp_path):
    d = mezzanine.DB(str(tmp_path / "db"), create_if_missing=True)
    yield d
    d.close()
