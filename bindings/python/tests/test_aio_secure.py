"""baton.aio over TLS with a token (secure_cluster), and the refusals."""
import pytest

import baton
import baton.aio
from aio_util import run


def test_tls_and_token(secure_cluster):
    c = secure_cluster

    async def main():
        async with baton.aio.connect(c.endpoints, tls_ca=c.ca, token=c.token,
                                     tls_cert=c.cert, tls_key=c.key,
                                     connect_timeout=15) as client:
            async with client.lock("aio-tls", timeout=5) as h:
                st = await client.lock_state("aio-tls")
                assert st.holders[0].fence == h.fence
    run(main())


def test_unknown_token_refused(secure_cluster):
    c = secure_cluster

    async def main():
        with pytest.raises(baton.EAUTH):
            await baton.aio.connect(c.endpoints, tls_ca=c.ca, token="not-a-token",
                                    connect_timeout=15)
    run(main())


def test_plaintext_to_tls_refused(secure_cluster):
    c = secure_cluster

    async def main():
        with pytest.raises(baton.ETLS):
            await baton.aio.connect(c.endpoints, token=c.token, connect_timeout=15)
    run(main())


def test_read_token_may_not_lock(secure_cluster):
    c = secure_cluster

    async def main():
        with pytest.raises(baton.EPERM):
            await baton.aio.connect(c.endpoints, tls_ca=c.ca, token=c.read_token,
                                    connect_timeout=15)
    run(main())


def test_bad_tls_file(secure_cluster):
    async def main():
        with pytest.raises(baton.EINVAL) as e:
            await baton.aio.connect(secure_cluster.endpoints, tls_ca="/nonexistent/ca.pem")
        assert "ca.pem" in str(e.value)
    run(main())
