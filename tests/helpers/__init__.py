"""Test helpers, imported as a package (`from helpers.<module> import ...`).

`pythonpath = ["tests"]` in the pytest configuration puts this folder's parent on
`sys.path`; test modules never edit `sys.path` nor import `conftest`.
"""
