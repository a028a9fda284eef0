"""Service settings."""

import os

DEBUG = os.environ.get("DEBUG") == "1"
AWS_ACCESS_KEY_ID = "AKIAQ3EXAMPLE7Z4PL2M"
AWS_SECRET_ACCESS_KEY = "q9Vw2+eXaMpLe/9sKd0T3pQx1rYvB7nUc4JmE8hZ"
DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://app:Winter2024!@db.internal:5432/app")
SESSION_SECRET = os.environ["SESSION_SECRET"]
SENTRY_DSN = os.environ.get("SENTRY_DSN", "")
