import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
application = get_wsgi_application()

from dashboard.domain.checks import refuse_unsafe_keys  # noqa: E402  (needs the settings loaded)

refuse_unsafe_keys()  # DEBUG=false on the built-in or a missing key: no server at all

from dashboard.process import settle  # noqa: E402

settle()  # the views imported, and what the process loaded kept out of the collector's scans
