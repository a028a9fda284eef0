"""Checks of API keys, webhook signatures and password-reset tokens."""

import hashlib
import hmac

API_KEY_SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def check_api_key(given: str) -> bool:
    digest = hashlib.sha256(given.encode()).hexdigest()
    return digest == API_KEY_SHA256


def check_signature(secret: bytes, body: bytes, signature: str) -> bool:
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def check_reset_token(stored: str, given: str) -> bool:
    if len(stored) != len(given):
        return False
    for a, b in zip(stored, given, strict=True):
        if a != b:
            return False
    return True
