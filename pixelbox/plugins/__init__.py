"""Plug-ins that put a pixelbox sandbox behind other frameworks' interfaces.

``inspect_sandbox``: an inspect_ai sandbox environment provider (``--sandbox pixelbox``), loaded
through inspect_ai's ``inspect_ai`` entry point group (the ``inspect`` extra). ``mcp_server``:
``pixelbox mcp``, a sandbox served over the Model Context Protocol (the ``mcp`` extra). ``render``: a
result as the text and images a model or client reads. A plug-in imports its framework itself, so
the base install never needs it.
"""
