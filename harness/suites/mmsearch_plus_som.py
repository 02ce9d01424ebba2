"""``--suite mmsearch-plus-som``: MMSearch-Plus with Set-of-Mark (numbered regions, zoom_in and image_search by index).

The same tasks, loader and scoring as ``mmsearch-plus`` (:mod:`.mmsearch_plus`); the first turn also
shows each image with its numbered regions (the task's boxes, else our deterministic OpenCV
proposals), and the tools are ``zoom_in(index)``, ``image_search(index)`` and ``text_search``,
at most 20 calls in all (the paper's +SoM setting).
"""

from __future__ import annotations

from pixelbox.harness.suites.mmsearch_plus import MMSearchPlus


class MMSearchPlusSoM(MMSearchPlus):
    """MMSearch-Plus with Set-of-Mark."""

    name = "mmsearch-plus-som"
    title = "MMSearch-Plus (Set-of-Mark)"
    summary = "MMSearch-Plus with numbered regions: zoom_in(index), image_search(index), text_search; 20 tool calls"
    som = True


SUITE = MMSearchPlusSoM()
