"""Token and key abuse: every forged, tampered, stale or malformed credential answers one 401.

One body, byte for byte, and the same `WWW-Authenticate` challenge, whatever was wrong with
the credential, so that an attacker learns nothing from the refusal (which check failed,
whether a user or key exists). Each case runs against a list, a detail and the write routes,
and no row changes. A credential of another scheme (`Basic`) is no credential at all
(RFC 6750 §3.1): it answers exactly like a request without one.
"""

import base64
import json
import uuid
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
import pytest
import time_machine
from django.conf import settings
from jwt.warnings import InsecureKeyLengthWarning

from accounts.models import Role
from accounts.services import password_change, user_remove
from accounts.tokens import issue_access_token
from apikeys import keys
from apikeys.models import ApiKey
from apikeys.services import api_keys_revoke
from tests.helpers import PASSWORD, assert_problem

CHALLENGE = 'Bearer realm="api"'
OTHER_SECRET = "another-secret-key-that-is-long-enough-for-hs256-signing"


@dataclass(frozen=True)
class Credential:
    header: str
    at: datetime | None = None  # the clock during the requests, when it matters


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def tampered(token: str, **changes) -> str:
    """The token with its payload changed and its signature kept."""
    header, _, signature = token.split(".")
    payload = _b64(json.dumps({**_claims(token), **changes}).encode())
    return f"{header}.{payload}.{signature}"


def unsigned(token: str) -> str:
    """The token's claims under `alg: none`, with an empty signature."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{token.split('.')[1]}."


def resigned(token: str, key: str = OTHER_SECRET, algorithm: str = "HS256", **changes) -> str:
    """The token's claims, changed, signed anew: with another key, or with another algorithm."""
    with warnings.catch_warnings():  # the secret is short for HS512: that is not the point
        warnings.simplefilter("ignore", InsecureKeyLengthWarning)
        return jwt.encode({**_claims(token), **changes}, key, algorithm=algorithm)


def _swapcase_secret(key: str) -> str:
    start = key.index("_live_") + len("_live_") + keys.LOOKUP_LENGTH
    return (
        key[:start] + key[start : -keys.CHECKSUM_LENGTH].swapcase() + key[-keys.CHECKSUM_LENGTH :]
    )


def _same_lookup_other_secret(key: str) -> str:
    """Well formed, right checksum, a real lookup id: only the stored digest can refuse it."""
    body = key[: -keys.CHECKSUM_LENGTH - keys.SECRET_LENGTH] + "A" * keys.SECRET_LENGTH
    return body + keys._checksum(body)


class Victim:
    """Credentials of organization A's member, and of fresh members to remove or lock out."""

    def __init__(self, cast, make_user, make_key) -> None:
        self.cast, self._make_user, self._make_key = cast, make_user, make_key
        self.token = self.jwt()

    def jwt(self, user=None) -> str:
        return issue_access_token(user or self.cast.member).token

    def key(self, user=None, **kwargs) -> str:
        return self._make_key(user or self.cast.member, "admin", **kwargs)

    def member(self):
        email = f"{uuid.uuid4().hex[:8]}@acme.test"
        return self._make_user(self.cast.org, email, Role.MEMBER, projects=(self.cast.project,))

    def removed(self, credential_of: Callable) -> str:
        member = self.member()
        credential = credential_of(member)
        user_remove(actor=self.cast.owner, user=member)
        return credential

    def deactivated(self, credential_of: Callable) -> str:
        member = self.member()
        credential = credential_of(member)
        member.is_active = False
        member.save(update_fields=["is_active"])
        return credential

    def before_password_change(self) -> str:
        member = self.member()
        token = self.jwt(member)
        password_change(user=member, current_password=PASSWORD, new_password="n3w-Pa55word!")
        return token

    def expired_jwt(self) -> Credential:
        exp = datetime.fromtimestamp(_claims(self.token)["exp"], UTC)
        return Credential(f"Bearer {self.token}", at=exp + timedelta(seconds=1))

    def expired_key(self) -> Credential:
        expires_at = datetime.now(UTC) + timedelta(hours=1)
        key = self.key(expires_at=expires_at)
        return Credential(f"Bearer {key}", at=expires_at + timedelta(seconds=1))

    def revoked_key(self) -> str:
        key = self.key()
        api_keys_revoke(api_keys=ApiKey.objects.filter(lookup_id=keys.parse(key).lookup_id))
        return key


def _wrong_checksum(key: str) -> str:
    return key[:-1] + ("A" if key[-1] != "A" else "B")


CASES: dict[str, Callable[[Victim], str | Credential]] = {
    # JWTs
    "jwt alg none": lambda v: unsigned(v.token),
    "jwt alg none, signature kept": lambda v: unsigned(v.token) + v.token.split(".")[2],
    "jwt signed with another key": lambda v: resigned(v.token),
    "jwt HS512 with the right key": lambda v: resigned(v.token, settings.SECRET_KEY, "HS512"),
    "jwt user id changed": lambda v: tampered(v.token, user_id=str(v.cast.owner.id)),
    "jwt organization added": lambda v: tampered(v.token, organization=str(v.cast.other_org.id)),
    "jwt role added": lambda v: tampered(v.token, role=Role.OWNER),
    "jwt token version changed": lambda v: tampered(v.token, ver=_claims(v.token)["ver"] + 1),
    "jwt expiry extended": lambda v: tampered(v.token, exp=_claims(v.token)["exp"] + 86400),
    "jwt a refresh token": lambda v: resigned(v.token, settings.SECRET_KEY, token_type="refresh"),
    "jwt without version": lambda v: jwt.encode(
        {k: c for k, c in _claims(v.token).items() if k != "ver"}, settings.SECRET_KEY, "HS256"
    ),
    "jwt unknown user, right key": lambda v: resigned(
        v.token, settings.SECRET_KEY, user_id=str(uuid.uuid4())
    ),
    "jwt truncated": lambda v: v.token[:-1],
    "jwt expired by one second": Victim.expired_jwt,
    "jwt of a removed user": lambda v: v.removed(v.jwt),
    "jwt of a deactivated user": lambda v: v.deactivated(v.jwt),
    "jwt before a password change": Victim.before_password_change,
    # API keys
    "key revoked": Victim.revoked_key,
    "key expired by one second": Victim.expired_key,
    "key truncated": lambda v: v.key()[:-1],
    "key upper-cased": lambda v: v.key().upper(),
    "key secret case-swapped": lambda v: _swapcase_secret(v.key()),
    "key wrong checksum": lambda v: _wrong_checksum(v.key()),
    "key never issued": lambda v: keys.generate("hm")[0],
    "key known lookup, other secret": lambda v: _same_lookup_other_secret(v.key()),
    "key under another prefix": lambda v: "xy" + v.key()[2:],
    "key of a removed user": lambda v: v.removed(v.key),
    "key of a deactivated user": lambda v: v.deactivated(v.key),
    # Headers
    "random garbage": lambda v: uuid.uuid4().hex * 3,
    "non-ASCII garbage": lambda v: "\xff\xfe\xfd",
    "very long garbage": lambda v: "x" * 8000,
    "empty bearer": lambda v: "",
    "two headers, two JWTs": lambda v: f"{v.token},Bearer {v.token}",
    "two headers, a JWT and a key": lambda v: f"{v.token}, Bearer {v.key()}",
    "two headers, two keys": lambda v: f"{v.key()},Bearer {v.key()}",
}


def credential_for(case: str, victim: Victim) -> Credential:
    made = CASES[case](victim)
    if isinstance(made, Credential):
        return made
    # Two headers reach the application joined by a comma, as WSGI servers join them.
    return Credential(f"Bearer {made}".rstrip())


@pytest.fixture
def victim(cast, make_user, make_key) -> Victim:
    return Victim(cast, make_user, make_key)


def routes(cast, endpoint):
    """A list, a detail and the three writes, all on A's data the member may see and change."""
    path = f"/api/v1/endpoints/{endpoint.id}"
    create = {
        "project": str(cast.project.id),
        "name": "x",
        "type": "http",
        "target": "https://x.test/",
    }
    return [
        ("GET", "/api/v1/endpoints", None),
        ("GET", path, None),
        ("POST", "/api/v1/endpoints", create),
        ("PATCH", path, {"name": "Taken over"}),
        ("DELETE", path, None),
    ]


@pytest.fixture
def refused(send, db):
    """The one 401 every bad credential gets: taken from a plainly invalid one."""
    response = send("GET", "/api/v1/endpoints", HTTP_AUTHORIZATION="Bearer not-a-credential")
    assert_problem(response, 401, "invalid_token")
    assert response["WWW-Authenticate"] == CHALLENGE
    return response.content


@pytest.mark.parametrize("case", CASES)
def test_every_bad_credential_answers_one_identical_401(
    case, victim, refused, cast, make_endpoint, send, unchanged
):
    endpoint = make_endpoint(cast.project)
    credential = credential_for(case, victim)

    clock = time_machine.travel(credential.at, tick=False) if credential.at else nullcontext()
    with clock, unchanged():
        for method, path, body in routes(cast, endpoint):
            response = send(method, path, body, HTTP_AUTHORIZATION=credential.header)
            assert response.status_code == 401, (case, method, path, response.content)
            assert response.content == refused, (case, method, path)
            assert response["WWW-Authenticate"] == CHALLENGE


def test_the_genuine_credentials_work_so_only_the_abuse_is_refused(
    cast, make_key, make_endpoint, send
):
    endpoint = make_endpoint(cast.project)
    token = issue_access_token(cast.member).token
    expiry = datetime.now(UTC) + timedelta(hours=1)
    key = make_key(cast.member, "admin", expires_at=expiry)

    for header, at in [
        (
            f"Bearer {token}",
            datetime.fromtimestamp(_claims(token)["exp"], UTC) - timedelta(seconds=1),
        ),
        (f"Bearer {key}", expiry - timedelta(seconds=1)),
    ]:
        with time_machine.travel(at, tick=False):
            for method, path, body in routes(cast, endpoint)[:4]:
                response = send(method, path, body, HTTP_AUTHORIZATION=header)
                assert response.status_code < 300, (header[:20], method, path, response.content)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_scheme_name_is_case_insensitive_for_jwts_and_keys(cast, make_key, send, scheme):
    """RFC 9110 §11.1: a client writing `bearer` is not refused."""
    for credential in (issue_access_token(cast.member).token, make_key(cast.member)):
        response = send("GET", "/api/v1/endpoints", HTTP_AUTHORIZATION=f"{scheme} {credential}")
        assert response.status_code == 200, (scheme, response.content)


@pytest.mark.parametrize(
    "header", ["Basic dXNlcjpwYXNzd29yZA==", "Token abc", "Digest username=x", "Negotiate abc"]
)
def test_another_scheme_answers_exactly_like_no_credential(cast, make_endpoint, send, header):
    endpoint = make_endpoint(cast.project)
    for method, path, body in routes(cast, endpoint):
        anonymous = send(method, path, body)
        response = send(method, path, body, HTTP_AUTHORIZATION=header)
        assert_problem(response, 401, "not_authenticated")
        assert response.content == anonymous.content
        assert response["WWW-Authenticate"] == anonymous["WWW-Authenticate"] == CHALLENGE


def test_a_valid_key_of_another_organization_sees_nothing_of_this_one(
    cast, make_key, make_endpoint, send, unchanged
):
    endpoint = make_endpoint(cast.project)
    header = f"Bearer {make_key(cast.outsider, 'admin')}"
    random = uuid.uuid4()

    with unchanged():
        listed = send("GET", "/api/v1/endpoints", HTTP_AUTHORIZATION=header)
        assert listed.status_code == 200
        assert listed.json()["results"] == []
        for method, path, body in routes(cast, endpoint)[1:]:
            foreign = send(method, path, body, HTTP_AUTHORIZATION=header)
            missing_path = path.replace(str(endpoint.id), str(random))
            missing_body = body and {
                k: str(uuid.uuid4()) if k == "project" else v for k, v in body.items()
            }
            missing = send(method, missing_path, missing_body, HTTP_AUTHORIZATION=header)
            assert foreign.status_code == missing.status_code, (method, path)
            assert foreign.status_code in (400, 404), (method, path, foreign.content)
            assert foreign.json()["code"] == missing.json()["code"]
