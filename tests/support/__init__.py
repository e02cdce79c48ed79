"""What the tests share and test nothing themselves: the engine harness and its capability table
(engines.py, capabilities.py), the throw-away servers (servers.py), the plain-Python references
(reference.py, reference_beyond.py), the fixture cases (cases.py), hypothesis strategies
(strategies.py), frame comparison (frames.py) and the headless browser (browser.py). The test
modules import them as ``support.<module>`` (pyproject.toml puts tests/ on the path)."""
