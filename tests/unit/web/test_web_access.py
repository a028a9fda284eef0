"""The pages for every reader: text contrast of at least 4.5:1 (WCAG AA) in the light
and the dark theme, computed from the stylesheet's palette; links that look like links
in both; graph links a screen reader can reach; one h1 per page; a folded entry's
summary shown as its Markdown renders it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.web_scene import RUN_ID, web_scene

from horde_tui.web.export import export
from horde_tui.web.style import CSS

TEXT_COLOURS = ("fg", "dim", "accent", "good", "warn", "bad")


def _palette(block: str) -> dict[str, tuple[int, int, int]]:
    return {
        name: tuple(int(value[i : i + 2], 16) for i in (0, 2, 4))  # type: ignore[misc]
        for name, value in re.findall(r"--([a-z]+):\s*#([0-9a-fA-F]{6})", block)
    }


def _themes() -> dict[str, dict[str, tuple[int, int, int]]]:
    light = _palette(CSS.split("@media", 1)[0])
    dark = {**light, **_palette(CSS.split("prefers-color-scheme: dark", 1)[1].split("}", 1)[0])}
    return {"light": light, "dark": dark}


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio of two colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _over(bg: tuple[int, int, int], rgba: tuple[int, int, int, float]) -> tuple[int, int, int]:
    *rgb, alpha = rgba
    return tuple(round(b * (1 - alpha) + c * alpha) for b, c in zip(bg, rgb, strict=True))  # type: ignore[return-value]


def test_contrast_of_every_text_colour_in_both_themes() -> None:
    """Each text colour on the page background and on the tinted ones drawn over it
    (code blocks, the graph's phase bands)."""
    tints = [
        (int(r), int(g), int(b), float(a))
        for r, g, b, a in re.findall(r"rgba\((\d+),\s*(\d+),\s*(\d+),\s*([.\d]+)\)", CSS)
    ]
    assert tints
    low: list[str] = []
    for theme, colours in _themes().items():
        assert set(TEXT_COLOURS) | {"bg"} <= set(colours), theme
        for bg in [colours["bg"], *(_over(colours["bg"], t) for t in tints)]:
            for name in TEXT_COLOURS:
                ratio = contrast(colours[name], bg)
                if ratio < 4.5:
                    low.append(f"{theme} --{name} on {bg}: {ratio:.2f}")
    assert not low, low


def test_links_are_underlined_in_both_themes() -> None:
    """Colour alone does not mark a link (the dark theme's blue is close to its text)."""
    rule = re.search(r"(?:^|\})\s*a\s*\{([^}]*)\}", CSS)
    assert rule and re.search(r"text-decoration:\s*underline", rule.group(1)), rule
    assert "prefers-color-scheme: dark" in CSS


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("access")
    return export(web_scene(work / "project"), "all", work / "out")


def test_one_h1_per_page_and_graph_links_outside_any_image_role(exported: Path) -> None:
    pages = sorted(exported.rglob("*.html"))
    assert len(pages) > 60
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert text.count("<h1") == 1, (page, re.findall(r"<h1[^>]*>[^<]*", text))
        for svg in re.findall(r"<svg[^>]*>.*?</svg>", text, re.S):
            head = svg.split(">", 1)[0]
            if "<a " in svg:  # an image role hides its links from a screen reader
                assert 'role="img"' not in head and "aria-hidden" not in head, (page, head)
                assert "aria-label=" in head, (page, head)


def test_a_folded_entry_shows_its_first_line_rendered(exported: Path) -> None:
    facts = (exported / "runs" / RUN_ID / "facts.html").read_text(encoding="utf-8")
    summaries = re.findall(r"<summary>(.*?)</summary>", facts, re.S)
    assert summaries, "the long fact is folded"
    for summary in summaries:
        assert "###" not in summary and "**" not in summary, summary
    assert any("<strong>" in s for s in summaries), summaries
