"""Seed the demo organization of `make demo`; running it again changes nothing."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from monitoring import demo


class Command(BaseCommand):
    help = (
        "Create (or find again) a demo organization with a known login and endpoints that "
        "probe the demo services of `make demo` (healthmon/devtargets.py)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--targets",
            default="http://127.0.0.1:8001",
            help="The origin where the demo services listen (default http://127.0.0.1:8001).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Seed, then print the login and what was made."""
        if not settings.DEBUG:
            raise CommandError(
                "seed_demo makes an owner whose password is printed in the README: it runs "
                "only on a development server (DEBUG=true), as `make demo` does."
            )
        try:
            seed = demo.demo_seed(targets=options["targets"])
        except demo.DemoConflict as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"demo: sign in at {settings.WEB_BASE_URL}/login as {demo.EMAIL}, "
            f"password {demo.PASSWORD}\n"
            f'  (organization "{seed.organization.name}": {seed.created} endpoint(s) created, '
            f"{seed.kept} already there, probing {options['targets']})"
        )
