"""The key format: randomness, checksum, digest."""

import math

from apikeys import keys


def test_a_key_has_the_contract_shape_and_at_least_160_random_bits():
    key, parsed = keys.generate("hm")

    assert key.startswith("hm_live_")
    assert parsed.display_prefix == key[: len("hm_live_") + keys.LOOKUP_LENGTH]
    assert keys.SECRET_LENGTH * math.log2(len(keys.ALPHABET)) >= 160
    assert len(key) == len("hm_live_") + keys.LOOKUP_LENGTH + keys.SECRET_LENGTH + 6


def test_keys_are_unique_and_parse_back():
    generated = [keys.generate("hm") for _ in range(200)]

    assert len({key for key, _ in generated}) == 200
    assert all(keys.parse(key) == parsed for key, parsed in generated)


def test_the_checksum_catches_every_single_character_change():
    key, _ = keys.generate("hm")
    body_start = len("hm_live_")

    for position in range(body_start, len(key)):
        replacement = "A" if key[position] != "A" else "B"
        assert keys.parse(key[:position] + replacement + key[position + 1 :]) is None


def test_malformed_keys_do_not_parse():
    key, _ = keys.generate("hm")

    assert keys.parse(key[:-1]) is None
    assert keys.parse(key + "x") is None
    assert keys.parse(key.upper()) is None
    assert keys.parse(key.replace("_live_", "_test_")) is None
    assert keys.parse("") is None


def test_only_a_sha256_digest_is_derived():
    key, parsed = keys.generate("hm")

    assert parsed.digest == keys.digest(key)
    assert len(parsed.digest) == 64
    assert key not in parsed.digest
