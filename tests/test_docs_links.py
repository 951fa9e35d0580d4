"""Every relative link in the README and the docs reaches a file that
exists, and every `#anchor` in one names a heading of the page it points
to. The speed and parallel pages link into each other's dated sections,
whose headings change as the log grows."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped but
    hyphens and underscores, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings; a repeated heading's
    second anchor gets `-1`, as on GitHub."""
    found, seen = set(), {}
    for line in FENCE.sub("", page.read_text()).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
    return found


def broken_links(pages: list[Path]) -> list[str]:
    bad = []
    for page in pages:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, frag = target.partition("#")
            dest = (page.parent / path).resolve() if path else page.resolve()
            name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
            if not dest.exists():
                bad.append(f"{name}: {target}: no such file")
            elif frag and dest.suffix == ".md" and frag not in anchors(dest):
                bad.append(f"{name}: {target}: no heading with that anchor")
    return bad


def shipped_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md")), *sorted(ROOT.glob("*/README.md"))]


def test_the_docs_links_reach_their_targets():
    pages = shipped_pages()
    assert len(pages) > 10
    assert broken_links(pages) == []


def test_a_broken_link_is_caught(tmp_path):
    """The check finds both kinds: a missing file and a missing heading."""
    (tmp_path / "b.md").write_text("# Session 32 (2026-11-29): what HPCC adds\n")
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#session-32-2026-11-29-what-hpcc-adds) [web](https://example.org/x#y)\n"
        "```\n[in a code block](nowhere.md)\n```\n"
        "[gone](c.md) [moved](b.md#session-31)\n"
    )
    assert broken_links([page]) == [
        f"{page}: c.md: no such file",
        f"{page}: b.md#session-31: no heading with that anchor",
    ]
