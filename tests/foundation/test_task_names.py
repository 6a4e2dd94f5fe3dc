"""Task names survive code moves: a queued task or a beat entry names its task by string, so a rename
(or a task losing its explicit `name=`) would leave messages nobody consumes after a deploy."""

from __future__ import annotations

import ast
from pathlib import Path

from django.conf import settings

from dws_project.celery import app

# The names queued messages and the beat schedule carry today. Moving a task's function to another
# module must not change its name: change this list only together with a migration plan for the queues.
TASK_NAMES = {
    "crawlers.crawl_latest",
    "crawlers.follow_head",  # issue 36: the head follower, one lease per chain
    "crawlers.crawl_finalized",
    "crawlers.crawl_old_unconfirmed",
    "crawlers.reconcile_last_day",
    "prices.fetch_prices",
    "prices.serve_price_requests",
    "donations.deliver_webhooks",
    "donations.refresh_proof_csv",  # issue 35: the stored donation CSV, built once per change
    "donations.tasks.complete_unstakes",
    "affiliates.tasks.resolve_affiliate_donations",
    "affiliates.purge_used_signatures",  # issue 22: the replay keys live in PostgreSQL
}


def _our_tasks() -> dict[str, object]:
    app.loader.import_default_modules()
    return {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}


def test_the_project_registers_exactly_the_task_names_in_use():
    assert set(_our_tasks()) == TASK_NAMES


def test_every_beat_entry_names_a_registered_task():
    registered = _our_tasks()
    scheduled = {entry: spec["task"] for entry, spec in settings.CELERY_BEAT_SCHEDULE.items()}

    unknown = {entry: task for entry, task in scheduled.items() if task not in registered}
    assert scheduled, "the beat schedule is empty"
    assert unknown == {}


def test_every_crawler_task_is_routed_to_the_crawlers_queue():
    for name in (n for n in TASK_NAMES if n.startswith("crawlers.")):
        assert app.amqp.router.route({}, name)["queue"].name == settings.CRAWLERS_QUEUE, name


def test_every_task_states_its_name_so_moving_its_function_keeps_it():
    """Celery's default name is the function's module path: a task without `name=` is renamed by a move."""
    root = Path(__file__).resolve().parents[2]
    unnamed = []
    for path in root.glob("*/tasks.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                for decorator in node.decorator_list:
                    call = decorator if isinstance(decorator, ast.Call) else None
                    target = call.func if call else decorator
                    if getattr(target, "id", getattr(target, "attr", "")) != "shared_task":
                        continue
                    if not call or not any(k.arg == "name" for k in call.keywords):
                        unnamed.append(f"{path.parent.name}.{node.name}")
    assert unnamed == []
