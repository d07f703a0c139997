"""The translation page of `keras-attention serve --ui` (`TranslationPage`, `translation_page.py`).

Static HTML, CSS and JavaScript (`static/`, package data) that call the local
server's public REST API only; the server mounts the page's routes under `--ui`.
"""
