def test_fixture_starts_a_cluster(cluster):
    assert cluster.endpoints.count(",") == 2
    st, out = cluster.ctl("lock-info", "x")
    assert st == 0 and "free" in out
