"""Who may talk to the grading cluster: the coordinator's side of Dask's TLS, the refusal
of an unencrypted address, and the course's certificates.

A Dask worker runs whatever function a client of its scheduler sends it, outside the
sandbox, and the tasks carry every submission. So the workers must be reached by the
coordinator alone: scheduler, workers and coordinator speak mutual TLS (``tls://``),
each presenting a certificate signed by the course's own CA, and a plain ``tcp://``
address is refused unless it is loopback or the instructor says ``--insecure``.

The coordinator's certificate files come from ``--tls-ca-file``, ``--tls-cert`` and
``--tls-key`` (the options ``dask scheduler`` and ``dask worker`` take), and whatever is
not given from Dask's own configuration (``distributed.comm.tls.ca-file``,
``distributed.comm.tls.client.cert``, ``distributed.comm.tls.client.key``), which
``distributed.security.Security`` reads.

``make_certificates`` writes a course's set: the CA, and a certificate and key for the
scheduler, the workers and the client (the coordinator). Dask checks the CA's signature,
not host names (it sets ``check_hostname = False``), and accepts any certificate of the
CA in any role: every key is as good as the coordinator's. The CA's own key is not kept,
so nobody can sign another certificate; a new set replaces the whole set.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

ENCRYPTED = {"tls", "wss"}  # Dask's schemes that speak TLS
ROLES = ("scheduler", "worker", "client")
DAYS = 365  # a course's term, with room


class InsecureCluster(ValueError):
    """A cluster address the coordinator will not use, with the one-line reason."""


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and ``localhost``: a server only this machine reaches."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # any other name: it may resolve anywhere
        return False


def coordinator_security(address: str, *, ca_file: str | None = None, cert: str | None = None,
                         key: str | None = None, insecure: bool = False):
    """The ``Security`` the coordinator connects to ``address`` with (None: Dask's default,
    for a plain loopback or ``--insecure`` address). Raises ``InsecureCluster``."""
    # distributed: 0.3 s to import, and only grade --cluster and serve --cluster reach a cluster
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.security import Security
    scheme, location = parse_address(address, strict=False)
    given = {name: str(Path(value).resolve()) for name, value in
             (("tls_ca_file", ca_file), ("tls_client_cert", cert), ("tls_client_key", key)) if value}
    if scheme in ENCRYPTED:
        security = Security(require_encryption=True, **given)  # the rest from Dask's config
        if not (security.tls_ca_file and security.tls_client_cert):
            raise InsecureCluster(f"{address} needs the course's CA and the coordinator's certificate: --tls-ca-file "
                                  "ca.pem --tls-cert client.pem --tls-key client-key.pem (made by 'maxpool-grader "
                                  "cluster-certs DIR'), or Dask's config distributed.comm.tls.ca-file and .client.*")
        for path in (security.tls_ca_file, security.tls_client_cert, security.tls_client_key):
            if path and "\n" not in path and not Path(path).is_file():  # a PEM text in Dask's config is no path
                raise InsecureCluster(f"{path}: no such certificate file (for {address})")
        return security
    if given:
        raise InsecureCluster(f"--tls-ca-file, --tls-cert and --tls-key need a tls:// address, not {address}")
    host = parse_host_port(location)[0] if scheme != "inproc" else "localhost"
    if not insecure and not is_loopback(host):
        raise InsecureCluster(f"{address} is not encrypted: anyone who reaches it can run code on the grading "
                              "workers and read every submission; use tls:// with the course's certificates "
                              "(maxpool-grader cluster-certs; docs/operations.md#cluster-certificates), or pass "
                              "--insecure on a network only you reach")
    return None


def make_certificates(folder: Path, days: int = DAYS, name: str = "maxpool-grader") -> dict[str, Path]:
    """Write ``ca.pem`` and ``<role>.pem`` + ``<role>-key.pem`` for each of ``ROLES`` into
    ``folder`` (keys readable by their owner only); returns {file name: path}."""
    # cryptography: only cluster-certs makes certificates; every other command would import it for nothing
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    if (folder / "ca.pem").exists():
        raise FileExistsError(f"{folder / 'ca.pem'} exists: a new set replaces every file, so write it elsewhere")
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def certificate(subject: str, public_key, issuer: x509.Name | None, signer, ca: bool) -> x509.Certificate:
        owner = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        usage = dict.fromkeys(("content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
                               "encipher_only", "decipher_only"), False)
        builder = (x509.CertificateBuilder().subject_name(owner).issuer_name(issuer or owner)
                   .public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=not ca, key_cert_sign=ca, crl_sign=ca, **usage),
                                  critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))
        if not ca:  # each role both listens and connects (workers talk to each other)
            builder = (builder.add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False))
        return builder.sign(signer, hashes.SHA256())

    def write(file_name: str, data: bytes, private: bool = False) -> Path:
        path = folder / file_name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        return path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = certificate(f"{name} cluster CA", ca_key.public_key(), None, ca_key, ca=True)
    written = {"ca.pem": write("ca.pem", ca_cert.public_bytes(serialization.Encoding.PEM))}
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(f"{name} {role}", key.public_key(), ca_cert.subject, ca_key, ca=False)
        written[f"{role}.pem"] = write(f"{role}.pem", cert.public_bytes(serialization.Encoding.PEM))
        written[f"{role}-key.pem"] = write(f"{role}-key.pem", key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), private=True)
    return written
