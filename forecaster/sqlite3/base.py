"""Django's SQLite backend, told the real bound-parameter limit of the linked SQLite.

Django assumes 999 parameters (SQLite before 3.32), which splits a 500-market upsert into
13 statements; SQLite 3.32+ accepts 32,766, so bulk writes stay one statement as on PostgreSQL.
"""

import sqlite3

from django.db.backends.sqlite3 import base, features


class DatabaseFeatures(features.DatabaseFeatures):
    max_query_params = 32766 if sqlite3.sqlite_version_info >= (3, 32) else 999


class DatabaseWrapper(base.DatabaseWrapper):
    features_class = DatabaseFeatures
