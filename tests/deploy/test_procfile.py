"""One place for the production commands: the Procfile. The README quotes it verbatim, and
`make worker` and `make beat` run its lines."""

import os
import subprocess
from pathlib import Path

from tests.deploy.stack import procfile

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_quotes_the_procfile_verbatim():
    readme = (ROOT / "README.md").read_text()

    assert f"```\n{(ROOT / 'Procfile').read_text()}```\n" in readme


def test_the_procfile_names_the_release_step_and_the_three_processes():
    commands = procfile(ROOT / "Procfile")

    assert list(commands) == ["release", "web", "worker", "beat"]
    assert commands["release"] == (
        "python manage.py migrate --noinput && python manage.py collectstatic --noinput"
    )
    assert "--workers ${WEB_CONCURRENCY:-2}" in commands["web"]


def _outside_make() -> dict[str, str]:
    """The environment without what a calling `make` (as in `make test`) passes down."""
    return {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}


def test_make_worker_and_make_beat_run_the_procfile_lines():
    for name in ("worker", "beat"):
        dry_run = subprocess.run(  # noqa: S603
            ["make", "--no-print-directory", "-n", "-o", ".venv/.installed", name],  # noqa: S607
            cwd=ROOT,
            env=_outside_make(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        line = dry_run.strip().splitlines()[-1]
        shell = subprocess.run(  # noqa: S603
            ["sh", "-c", line.replace("exec ", "echo ", 1)],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        ).stdout

        assert shell.strip() == procfile(ROOT / "Procfile")[name]
