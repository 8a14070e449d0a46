"""TLS and tokens (a secure cluster)."""
import pytest

import baton


def test_tls_with_a_token_locks(secure_cluster):
    c = secure_cluster
    with baton.Client(c.endpoints, tls_ca=c.ca, token=c.token, client_name="tls") as cl:
        with cl.lock("app/x") as h:
            assert h.fence > 0
            assert cl.lock_state("app/x").holders[0].client_name == "tls"


def test_a_wrong_token_raises_eauth(secure_cluster):
    c = secure_cluster
    with pytest.raises(baton.EAUTH) as e:
        baton.Client(c.endpoints, tls_ca=c.ca, token="not-a-token", connect_timeout=10)
    assert str(e.value)  # the library's message says why


def test_no_ca_against_tls_nodes_raises_etls(secure_cluster):
    c = secure_cluster
    with pytest.raises((baton.ETLS, baton.EUNAVAIL)):
        baton.Client(c.endpoints, token=c.token, connect_timeout=2)


def test_a_read_token_reads_but_may_not_lock(secure_cluster):
    c = secure_cluster
    with pytest.raises(baton.EPERM) as e:
        baton.Client(c.endpoints, tls_ca=c.ca, token=c.read_token)
    assert isinstance(e.value, PermissionError)
    with baton.Client(c.endpoints, tls_ca=c.ca, token=c.read_token, read_only=True) as r:
        assert r.lock_state("app/y").held is False
        with pytest.raises(baton.ESESSION):
            r.trylock("app/y")
