"""The broker's TLS material: a certificate authority of the site's floor and the broker's
certificate, made by ``tablectl broker setup`` unless the site brings its own.

Everything a table sends (requests, their signatures, the events with hole cards) crosses the
casino's network; on plain TCP anyone on the path can read it, capture a request and replay it.
The broker listens with TLS (RFC 8446, TLS 1.2 at least) and the tables, pits and consoles verify
its certificate against the floor's CA (``[broker.tls] ca_file``).

Files, in ``DIR/tls/`` (the keys 0600, kept when the command runs again):

* ``ca.key``, ``ca-cert.pem``: the floor's CA (ECDSA P-256, ten years, ``pathlen`` 0: it signs
  the broker's certificates, nothing else);
* ``ca.crt``: what clients trust: the CA's certificate, followed by the previous CA's while a CA
  is being replaced (``--renew-ca``);
* ``server.key``, ``server.crt``: the broker's key and certificate (ECDSA P-256, 825 days,
  ``serverAuth``, a subjectAltName for each host name and address clients use).

Rotation: ``--renew-server-cert`` makes a new key and certificate with the same CA (nothing
changes for clients); ``--renew-ca`` makes a new CA, keeps the old one in ``ca.crt`` beside it
and signs a new server certificate. mosquitto reads the new files on SIGHUP
(``systemctl reload mosquitto``, mosquitto 2.0 and later).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
SERVER_DAYS = 825


@dataclass(frozen=True)
class BrokerTls:
    """The files a TLS listener names (mosquitto's ``cafile``, ``certfile``, ``keyfile``)."""

    ca_file: Path
    cert_file: Path
    key_file: Path


class TlsSetupError(ValueError):
    """TLS material that cannot be used; the message says which file and why."""


def site_tls(ca_file: Path, cert_file: Path, key_file: Path) -> BrokerTls:
    """The site's own CA, certificate and key (checked to be PEM, the key to match)."""
    try:
        cas = x509.load_pem_x509_certificates(ca_file.read_bytes())
        cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    except FileNotFoundError as exc:
        raise TlsSetupError(f"{exc.filename}: no such file") from None
    except (OSError, ValueError, TypeError) as exc:
        raise TlsSetupError(f"the site's TLS files cannot be read: {exc}") from None
    if not cas:
        raise TlsSetupError(f"{ca_file}: no certificate in it")
    if cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) != key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ):
        raise TlsSetupError(f"{key_file} is not the key of {cert_file}")
    return BrokerTls(ca_file, cert_file, key_file)


def ensure_tls(
    directory: Path,
    hostnames: Sequence[str],
    *,
    renew_server: bool = False,
    renew_ca: bool = False,
    now: datetime.datetime | None = None,
) -> BrokerTls:
    """The CA and the broker's certificate in ``directory`` (made when missing or renewed)."""
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    now = now or datetime.datetime.now(datetime.UTC)
    ca_key_file, ca_cert_file = directory / "ca.key", directory / "ca-cert.pem"
    bundle = directory / "ca.crt"
    previous: list[x509.Certificate] = []
    if renew_ca and ca_cert_file.exists():
        previous = [x509.load_pem_x509_certificate(ca_cert_file.read_bytes())]
    if renew_ca or not (ca_key_file.exists() and ca_cert_file.exists()):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = _ca_certificate(ca_key, now)
        _write_private(ca_key_file, _key_pem(ca_key))
        ca_cert_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        bundle.write_bytes(
            b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (ca_cert, *previous))
        )
        renew_server = True
    else:
        loaded = serialization.load_pem_private_key(ca_key_file.read_bytes(), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise TlsSetupError(f"{ca_key_file}: not the EC key this command makes")
        ca_key = loaded
        ca_cert = x509.load_pem_x509_certificate(ca_cert_file.read_bytes())
        if not bundle.exists():
            bundle.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    key_file, cert_file = directory / "server.key", directory / "server.crt"
    if renew_server or not (key_file.exists() and cert_file.exists()):
        if not hostnames:
            raise TlsSetupError("give the broker's host names (--hostname) for its certificate")
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _server_certificate(key, hostnames, ca_key, ca_cert, now)
        _write_private(key_file, _key_pem(key))
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return BrokerTls(bundle, cert_file, key_file)


def certificate_names(cert_file: Path) -> list[str]:
    """The host names and addresses a certificate is for (its subjectAltName)."""
    cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(n.value) for n in names]


def _ca_certificate(key: ec.EllipticCurvePrivateKey, now: datetime.datetime) -> x509.Certificate:
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tablectl"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"tablectl floor CA {now:%Y-%m-%d}"),
        ]
    )
    public = key.public_key()
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )


def _server_certificate(
    key: ec.EllipticCurvePrivateKey,
    hostnames: Sequence[str],
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    now: datetime.datetime,
) -> x509.Certificate:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hostnames):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=SERVER_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
