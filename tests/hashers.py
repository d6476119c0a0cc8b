"""A bcrypt hasher with the lowest cost, for tests only."""

from django.contrib.auth.hashers import BCryptSHA256PasswordHasher


class CheapBCryptSHA256PasswordHasher(BCryptSHA256PasswordHasher):
    rounds = 4
