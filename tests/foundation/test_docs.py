"""The manual's links hold: every relative link and #anchor in the README and docs/*.md resolves, every
docs/ path the code names exists, and every pointer to a section names a heading of that page."""

from __future__ import annotations

import re

import pytest

from tests.manual import (
    DOCS_PATH,
    POINTER,
    ROOT,
    has_heading,
    link_problems,
    manual_pages,
    page_text,
    tracked_texts,
)


@pytest.mark.parametrize("page", manual_pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page) -> None:
    assert link_problems(page) == []


def test_the_readme_links_every_page_of_the_manual() -> None:
    readme = page_text("README.md")
    for page in manual_pages()[1:]:
        assert f"]({page.relative_to(ROOT).as_posix()})" in readme, page.name


def test_a_broken_link_or_anchor_is_reported(tmp_path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "a.md").write_text("# A\n\n## Section: one `thing`\n\nback to [the README](../README.md)\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n\n"
        "[fine](guide/a.md#section-one-thing), [also fine](#title), [elsewhere](https://example.org/x.md#y)\n"
        "[gone](guide/b.md), [no such heading](guide/a.md#section-two), [here either](#nope)\n\n"
        "```\n[inside a code block](guide/c.md)\n```\n"
    )

    assert link_problems(readme, root=tmp_path) == [
        "README.md: guide/b.md -> no such file",
        "README.md: guide/a.md#section-two -> no heading with that anchor in a.md",
        "README.md: #nope -> no heading with that anchor in README.md",
    ]
    assert link_problems(tmp_path / "guide" / "a.md", root=tmp_path) == []


def test_every_docs_path_named_in_a_file_exists() -> None:
    missing = {
        f"{path.relative_to(ROOT)}: {name}"
        for path, text in tracked_texts().items()
        for name in DOCS_PATH.findall(text)
        if not (ROOT / name).exists()
    }
    assert missing == set()


def test_every_pointer_to_a_section_names_a_heading_of_that_page() -> None:
    pointers = {
        (path.relative_to(ROOT).as_posix(), page, heading)
        for path, text in tracked_texts().items()
        for page, heading in POINTER.findall(text)
    }
    # the log lines and admin pages the runbooks answer, the alerts' runbook annotations, ...
    assert {heading for _, _, heading in pointers} >= {"a crawler is stuck on a block", "an unexplained inflow"}
    assert {(source, page, heading) for source, page, heading in pointers if not has_heading(page, heading)} == set()


def test_configuration_names_every_variable_of_env_example() -> None:
    example = (ROOT / "deploy" / "env.example").read_text()
    variables = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, flags=re.MULTILINE))
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", page_text("docs/configuration.md")))
    assert len(variables) > 30
    assert variables - documented == set()
