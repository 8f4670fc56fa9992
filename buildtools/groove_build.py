"""groove's build backend: setuptools', after putting the embedding model's files in place (`minilm.fetch`).

The model's weights are not in git (87 MiB); a wheel, an editable install and so every install from a checkout
carry them. pip finds this module through `backend-path` in pyproject.toml.
"""

from __future__ import annotations

from typing import Any

import minilm  # backend-path puts buildtools/ first on sys.path
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every hook setuptools has, two of them wrapped below


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    minilm.fetch()
    return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    minilm.fetch()
    return str(_setuptools.build_editable(wheel_directory, config_settings, metadata_directory))
