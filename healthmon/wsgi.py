"""WSGI entry point (gunicorn healthmon.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")

application = get_wsgi_application()
