pytest_plugins = ["pytester"]
def test_x(pytester): pass
