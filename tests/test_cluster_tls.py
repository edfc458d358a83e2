"""Who may reach the grading cluster (cluster/tls.py), without a cluster: which addresses the
coordinator refuses and why, the Security it connects with, and the course's certificates.
tests/test_cluster.py shows the same against a real TLS scheduler and workers."""

from __future__ import annotations

import stat

import dask
import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

from maxpool_grader.cluster.tls import InsecureCluster, coordinator_security, is_loopback, make_certificates


@pytest.fixture
def certs(tmp_path):
    make_certificates(tmp_path / "certs")
    return tmp_path / "certs"


def options(certs):
    return dict(ca_file=str(certs / "ca.pem"), cert=str(certs / "client.pem"), key=str(certs / "client-key.pem"))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"])
def test_loopback_is_this_machine_only(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["10.0.0.5", "192.168.1.20", "2001:db8::1", "grader.example.org", "0.0.0.0", ""])
def test_any_other_host_is_not_loopback(host):
    assert not is_loopback(host)


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://[::1]:8786", "tcp://localhost:8786",
                                     "127.0.0.1:8786"])
def test_plain_tcp_on_loopback_stays_allowed(address):
    assert coordinator_security(address) is None


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "grader.example.org:8786", "ws://10.0.0.5:8786"])
def test_plain_tcp_off_loopback_is_refused_with_the_reason_and_the_way_out(address):
    with pytest.raises(InsecureCluster) as refused:
        coordinator_security(address)
    reason = str(refused.value)
    assert "\n" not in reason
    assert "not encrypted" in reason and "run code on the grading workers" in reason
    assert "tls://" in reason and "--insecure" in reason
    assert coordinator_security(address, insecure=True) is None


def test_tls_options_with_a_plain_address_are_refused(certs):
    with pytest.raises(InsecureCluster, match="need a tls:// address"):
        coordinator_security("tcp://127.0.0.1:8786", **options(certs))


def test_tls_connects_with_the_given_certificates_and_requires_encryption(certs):
    security = coordinator_security("tls://10.0.0.5:8786", **options(certs))
    assert security.require_encryption
    assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == tuple(
        options(certs).values())


def test_tls_takes_what_is_not_given_from_dasks_config(certs):
    with dask.config.set({"distributed.comm.tls.ca-file": str(certs / "ca.pem"),
                          "distributed.comm.tls.client.cert": str(certs / "client.pem"),
                          "distributed.comm.tls.client.key": str(certs / "client-key.pem")}):
        security = coordinator_security("tls://10.0.0.5:8786")
        assert security.tls_client_cert == str(certs / "client.pem") and security.require_encryption
        mine = coordinator_security("tls://10.0.0.5:8786", cert=str(certs / "worker.pem"))
        assert mine.tls_client_cert == str(certs / "worker.pem") and mine.tls_ca_file == str(certs / "ca.pem")


def test_tls_without_a_ca_or_certificate_is_refused_with_what_to_give():
    with pytest.raises(InsecureCluster) as refused:
        coordinator_security("tls://10.0.0.5:8786")
    assert "--tls-ca-file" in str(refused.value) and "cluster-certs" in str(refused.value)


def test_a_missing_certificate_file_is_named(certs):
    with pytest.raises(InsecureCluster, match="client-key.pem: no such certificate file"):
        coordinator_security("tls://10.0.0.5:8786", **dict(options(certs), key=str(certs.parent / "client-key.pem")))


def test_the_course_certificates_are_signed_by_its_ca_and_the_keys_are_private(certs):
    ca = x509.load_pem_x509_certificate((certs / "ca.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for role in ("scheduler", "worker", "client"):
        cert = x509.load_pem_x509_certificate((certs / f"{role}.pem").read_bytes())
        cert.verify_directly_issued_by(ca)  # raises when it is not
        assert role in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        assert stat.S_IMODE((certs / f"{role}-key.pem").stat().st_mode) == 0o600
    assert sorted(path.name for path in certs.iterdir()) == [
        "ca.pem", "client-key.pem", "client.pem", "scheduler-key.pem", "scheduler.pem", "worker-key.pem", "worker.pem"]


def test_another_set_has_another_ca(certs, tmp_path):
    make_certificates(tmp_path / "other")
    other_ca = x509.load_pem_x509_certificate((tmp_path / "other" / "ca.pem").read_bytes())
    with pytest.raises(InvalidSignature):
        x509.load_pem_x509_certificate((certs / "client.pem").read_bytes()).verify_directly_issued_by(other_ca)


def test_a_folder_that_has_a_set_is_not_overwritten(certs):
    before = (certs / "ca.pem").read_bytes()
    with pytest.raises(FileExistsError):
        make_certificates(certs)
    assert (certs / "ca.pem").read_bytes() == before
