def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (e.g. scanning the whole installed torch package)")
