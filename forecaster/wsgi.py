import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forecaster.settings")
application = get_wsgi_application()

# What is loaded by this point (Django, the apps, the URLconf, templates) lives as long as the
# process: frozen out of the collector's view, it is not scanned by every full collection, a
# scan that would take most of a page's p95 (bench/README.md §3).
gc.freeze()
