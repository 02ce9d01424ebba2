"""``--suite visualtoolbench-stateful``: VisualToolBench with one interpreter kept for the whole episode.

The official ``python_image_processing`` runs every call in fresh globals; this explicit variant
keeps variables between calls (as a Jupyter-style agent expects) and is reported under its own name
so its figures are never mixed with the official setting's.
"""

from __future__ import annotations

from pixelbox.harness.suites.visualtoolbench import StatefulVisualToolBench

SUITE = StatefulVisualToolBench()
