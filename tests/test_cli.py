"""attn_core.cli (run by attn_core.__main__): ``python -m attn_core`` dispatches to the cost, bench, verify and published
commands, each from one table. Oracle for the numbers: card 13's Llama 2 7B figure typed from the spec (2 · 32 layers ·
32 KV heads · 128 · 2 B = 512 KiB of KV cache per token, 2 GiB at 4,096 tokens)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attn_core import cli

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attn_core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_the_cost_command_prices_llama_2_7b_as_card_13_does():
    out = run("cost", "--model", "llama-2-7b", "--seq-len", "4096", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["kv_cache_bytes_per_token"] == 512 * 1024
    assert report["kv_cache_bytes"] == 2 * 1024**3


@pytest.mark.parametrize(
    ("command", "words"), [("bench", "--seq-lens"), ("verify", "--layers"), ("published", "--regime")]
)
def test_each_subcommand_reaches_its_own_parser(command, words):
    out = run(command, "--help")
    assert out.returncode == 0, out.stderr
    assert f"python -m attn_core {command}" in out.stdout and words in out.stdout


def test_an_unknown_command_is_refused_with_the_choices():
    out = run("nope")
    assert out.returncode != 0 and "cost" in out.stderr


def test_every_command_in_the_table_answers_its_help_and_the_usage_lists_it():
    """The table is the one list: each command's module parses ``--help`` (exit 0) and the top-level
    usage names every command."""
    listing = run("--help")
    assert listing.returncode == 0
    for command in cli.COMMANDS:
        assert command in listing.stdout
        out = run(command, "--help")
        assert out.returncode == 0, (command, out.stderr)
