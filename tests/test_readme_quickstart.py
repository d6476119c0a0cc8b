"""The README's API quickstart works as written: its shell block runs against a live server."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
MARKER = "<!-- api-quickstart -->"


def quickstart() -> str:
    """The shell block right after the marker."""
    text = README.read_text()
    match = re.search(re.escape(MARKER) + r"\s*```sh\n(.*?)```", text, re.DOTALL)
    assert match, "README.md has no API quickstart block after its marker"
    return match.group(1)


def test_the_quickstart_signs_in_and_calls_every_family_with_the_scopes_it_grants():
    block = quickstart()

    for call in (
        "/auth/login",
        "/api-keys",
        '"$BASE/endpoints"',
        "/checks",
        "/incidents",
        "/analytics/",
        "/notification-channels",
    ):
        assert call in block
    scopes = re.search(r'"scopes": \[(.*?)\]', block, re.DOTALL)
    assert scopes is not None
    granted = set(re.findall(r'"([a-z:]+)"', scopes.group(1)))
    assert granted == {"endpoint:read", "endpoint:create", "incident:read", "analytics:read"}


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.django_db(transaction=True)
def test_the_quickstart_runs_against_a_live_server(live_server):
    env = {**os.environ, "BASE": f"{live_server.url}/api/v1"}

    run = subprocess.run(  # noqa: S603 - the README's own block
        ["bash", "-euo", "pipefail", "-c", quickstart()],  # noqa: S607
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == ""
    answers = run.stdout
    assert '"email":"you@example.com"' in answers.replace(" ", "")  # /auth/me
    assert '"kind":"email"' in answers.replace(" ", "")  # the channel
    assert '"count":0' in answers.replace(" ", "")  # no checks or incidents yet
