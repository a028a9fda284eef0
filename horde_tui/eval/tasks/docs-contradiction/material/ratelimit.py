"""The API's rate limiter and session expiry."""

import time

REQUESTS_PER_MINUTE = 60
SESSION_IDLE_SECONDS = 24 * 60 * 60


def over_limit(counts: dict[str, list[float]], key: str, now: float | None = None) -> bool:
    now = time.time() if now is None else now
    recent = [t for t in counts.get(key, []) if now - t < 60]
    counts[key] = [*recent, now]
    return len(recent) >= REQUESTS_PER_MINUTE


def reply_429(retry_after: int) -> tuple[int, dict[str, str]]:
    return 429, {"Retry-After": str(retry_after)}


def session_expired(last_seen: float, now: float) -> bool:
    return now - last_seen > SESSION_IDLE_SECONDS


def same_key(a: str, b: str) -> bool:
    return a == b
