"""Package layout: the design card keeps ``shared/`` and ``workers/`` at the top of the repository;
they install under one import name, ``edgeindex``, so nothing generic lands at the top of
site-packages. Every package under ``shared/`` is found, not listed, and the migrations ship as
``edgeindex.migrations`` so an installed worker can create its schema without the repository."""

from setuptools import find_packages, setup

setup(
    packages=[
        "edgeindex",
        *(f"edgeindex.{name}" for name in find_packages("shared")),
        "edgeindex.workers",
        "edgeindex.migrations",
    ],
    package_dir={"edgeindex": "shared", "edgeindex.workers": "workers", "edgeindex.migrations": "infra/migrations"},
)
