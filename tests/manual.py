"""The manual as the tests read it: the README and docs/*.md, their headings, anchors and links, and the
pointers the code prints to a section (`docs/operating.md, "a crawler is stuck on a block"`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[1]
# A pointer from code to the manual: the page, then the heading in double quotes.
POINTER = re.compile(r'(docs/[\w.-]+\.md), "([^"]+)"')
# A docs/ path named in a file (not the tail of a URL such as https://example.org/docs/...).
DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w./-]*\w")

_parser = MarkdownIt("commonmark").enable("table")


def manual_pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def page_text(relative: str) -> str:
    """A page of the manual by its path from the repository root, e.g. `docs/api.md`."""
    return (ROOT / relative).read_text()


def _tokens(path: Path) -> list[Token]:
    return _parser.parse(path.read_text())


def headings(path: Path) -> list[str]:
    """Each heading as it reads rendered: text and inline code, without the markup."""
    tokens = _tokens(path)
    return [
        "".join(child.content for child in tokens[i + 1].children or [] if child.type in ("text", "code_inline"))
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def anchor(heading: str) -> str:
    # GitHub's rule for heading anchors (no library we pin implements it): lower case, every character
    # other than a letter, digit, '_', '-' or space dropped, spaces turned into '-'.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the page's headings; a repeated one gets -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    for heading in headings(path):
        slug = anchor(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    """Every link and image target on the page (code blocks and inline code are not links)."""
    found = []
    for token in _tokens(path):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrGet("href")))
            elif child.type == "image":
                found.append(str(child.attrGet("src")))
    return found


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with the page's relative links: a file that does not exist, an anchor no heading has."""
    problems = []
    for target in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # another site: not ours to check offline
        linked = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not linked.is_relative_to(root.resolve()) or not linked.exists():
            problems.append(f"{page.name}: {target} -> no such file")
        elif parts.fragment and (linked.suffix != ".md" or parts.fragment not in anchors(linked)):
            problems.append(f"{page.name}: {target} -> no heading with that anchor in {linked.name}")
    return problems


def tracked_texts(root: Path = ROOT) -> dict[Path, str]:
    """The text of every file git tracks or would (screenshots, vendored packages and other binaries left out)."""
    listing = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]  # new files count before a commit
    names = subprocess.run(listing, cwd=root, capture_output=True, text=True, check=True).stdout
    texts = {}
    for name in names.splitlines():
        path = root / name
        if name.startswith("web/static/web/vendor/") or not path.is_file():
            continue
        try:
            texts[path] = path.read_text()
        except UnicodeDecodeError:
            continue
    return texts


def pointed_section(text: str) -> tuple[str, str]:
    """The page and heading the first pointer in a log line or message names."""
    match = POINTER.search(text)
    assert match, f"no pointer to the manual in {text!r}"
    return match.group(1), match.group(2)


def has_heading(relative: str, heading: str) -> bool:
    path = ROOT / relative
    return path.is_file() and heading.lower() in (h.lower() for h in headings(path))
