"""A private certificate authority for the TLS tests: it issues server certificates for
127.0.0.1 (or another name) with the validity a test asks for, and TLS peers serve them."""

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.monitoring.peers import HOST

NOW = datetime.datetime.now(datetime.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class Authority:
    """A CA of its own: trusted by no system, only by a `config.ca_certificate`."""

    def __init__(self, name: str = "healthmon test CA") -> None:
        self.name = name
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(days=400))
            .not_valid_after(NOW + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> str:
        """The CA certificate, as `config.ca_certificate` takes it."""
        return self.certificate.public_bytes(serialization.Encoding.PEM).decode()

    def leaf_pem(
        self,
        *,
        days: float = 90,
        issued_days_ago: float = 1,
        host: str = HOST,
        ca: bool = False,
    ) -> tuple[bytes, bytes]:
        """A certificate for `host` valid until `days` from now (negative: expired), and
        its key, both PEM."""
        key = ec.generate_private_key(ec.SECP256R1())
        try:
            names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(host))]
        except ValueError:
            names = [x509.DNSName(host)]
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(host))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - datetime.timedelta(days=issued_days_ago))
            .not_valid_after(NOW + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        return certificate.public_bytes(serialization.Encoding.PEM), _pem_key(key)

    def server_context(self, directory: Path, **leaf: object) -> ssl.SSLContext:
        """A server TLS context serving a certificate of this CA (see `leaf_pem`)."""
        cert, key = self.leaf_pem(**leaf)  # type: ignore[arg-type]
        directory.mkdir(parents=True, exist_ok=True)
        cert_file, key_file = directory / "cert.pem", directory / "key.pem"
        cert_file.write_bytes(cert)
        key_file.write_bytes(key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        return context
