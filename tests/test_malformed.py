"""A catalogue of malformed inputs, each tested: typed matrices, URL parameters, config files,
command lines and sizes whose products overflow 64-bit integers.

Every case must end in a clear message (next to the widget on a page, a ConfigError or a usage
error in the CLI) and never in a traceback; on a page the other inputs are kept."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from attn_core.cost import cli
from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import MAX_CONFIG_BYTES, load_preset, parse_config_bytes, parse_config_text

# -- typed matrices (the Playground's Q box) ---------------------------------------------------
BAD_MATRICES = {
    "empty": "",
    "blank": "   \n  ",
    "word": "abc",
    "ragged": "1, 2\n3",
    "nan": "nan, 1\n1, 1",
    "inf": "inf, 1\n1, 1",
    "minus inf": "-inf, 0\n0, 0",
    "overflow": "1e309, 0\n0, 0",
    "python list": "[[1, 2], [3, 4]]",
    "expression": "__import__('os').system('true')",
    "html": "<script>alert(1)</script>",
    "hex": "0x1F, 2\n3, 4",
    "dangling exponent": "1e, 2\n3, 4",
    "double minus": "--1, 2\n3, 4",
    "nul bytes": "\x00\x01, 2\n3, 4",
    "emoji": "🙂, 2\n3, 4",
    "too many rows": "\n".join(["1, 2"] * 1000),
    "too many columns": ", ".join(["1"] * 1000),
    "a million characters": "1" * 1_000_000,
    "a million separators": ";" * 1_000_000,
    "wrong width for K": "1, 2, 3\n4, 5, 6\n7, 8, 9",
}
# Forms a person really types, which must be read, not refused.
GOOD_MATRICES = {
    "unicode minus": ("−1, 2\n3, 4", [[-1, 2], [3, 4]]),
    "spaces": ("1 2\n3 4", [[1, 2], [3, 4]]),
    "semicolons": ("1; 2\n3; 4", [[1, 2], [3, 4]]),
    "tabs and blank lines": ("1\t2\n\n3\t4\n", [[1, 2], [3, 4]]),
    "plus and dots": ("+1, .5\n5., -0", [[1, 0.5], [5, 0]]),
    "underflow": ("1e-400, 1\n1, 1", [[0, 1], [1, 1]]),
    "a doubled comma": ("1,, 2\n3, 4", [[1, 2], [3, 4]]),
}


@pytest.fixture(scope="module")
def typed(request):
    """The Playground on typed matrices, with a non-default scale the bad input must not reset."""
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["in_src"] = "typed matrices"
    at.run()
    at.switch_page("pages/playground.py").run()
    at.selectbox(key="in_scale").set_value(at.selectbox(key="in_scale").options[1]).run()
    return at


def _messages(at) -> str:
    return " ".join(m.value for kind in ("error", "warning", "info") for m in at.get(kind))


@pytest.mark.parametrize("text", BAD_MATRICES.values(), ids=BAD_MATRICES.keys())
def test_a_bad_matrix_gets_a_message_and_keeps_the_rest(typed, text):
    scale = typed.selectbox(key="in_scale").value
    key = "in_K" if text.startswith("1, 2, 3\n") else "in_Q"
    good = typed.text_area(key=key).value
    typed.text_area(key=key).set_value(text).run()
    try:
        assert not typed.exception, typed.exception
        sidebar_errors = [e.value for e in typed.sidebar.error]
        assert sidebar_errors, "the message belongs next to the box, in the sidebar"
        assert any(w in " ".join(sidebar_errors) for w in ("Q", "K", "row", "number", "cap", "character"))
        assert "Fix the input" in _messages(typed)  # the page says where to look, and stops cleanly
        assert typed.text_area(key="in_V").value  # the other boxes are untouched
    finally:
        typed.text_area(key=key).set_value(good).run()
    assert not typed.sidebar.error  # the page recovers once the box is fixed,
    assert typed.selectbox(key="in_scale").value == scale  # with the user's other choices kept


@pytest.mark.parametrize(("text", "expected"), GOOD_MATRICES.values(), ids=GOOD_MATRICES.keys())
def test_forms_people_type_are_read(text, expected):
    from attn_core.views.inputs import parse_matrix

    assert parse_matrix(text, "Q").tolist() == expected


# -- URL parameters -----------------------------------------------------------------------------
HOSTILE_QUERIES = [
    ("pages/playground.py", {"zzz": "1"}),
    ("pages/playground.py", {"in_src": "random", "in_L": "abc"}),
    ("pages/playground.py", {"in_src": "random", "in_L": "100000"}),
    ("pages/playground.py", {"in_src": "random", "in_L": "-5"}),
    ("pages/playground.py", {"in_src": "random", "in_L": "3.5"}),
    ("pages/playground.py", {"in_src": "random", "in_L": "nan"}),
    ("pages/playground.py", {"in_src": "random", "in_seed": "1e99"}),
    ("pages/playground.py", {"in_src": "random", "in_H": "4", "in_Hkv": "3"}),
    ("pages/playground.py", {"in_src": "bogus"}),
    ("pages/playground.py", {"in_mask": "<script>"}),
    ("pages/playground.py", {"in_scale": "x" * 100_000}),
    ("pages/playground.py", {"in_src": "typed matrices", "in_Q": "1," * 50_000}),
    ("pages/playground.py", {"in_src": "typed matrices", "in_Q": "nan"}),
    ("pages/playground.py", {"in_tau": "-1", "in_scale": "temperature"}),
    ("pages/playground.py", {"projector": "maybe"}),
    ("pages/playground.py", {"pg_head": "99"}),
    ("pages/playground.py", {"pg_row": "-1"}),
    ("pages/playground.py", {"pg_slip_on": "yes", "pg_slip": "no such slip"}),
    ("pages/masks.py", {"mk_section": "nope", "mk_size": "0"}),
    ("pages/masks.py", {"mk_section": "\x00", "mk_d": "1e9", "mk_seed": "-3"}),
    ("pages/gradients.py", {"gr_section": "bogus", "in_src": "random", "in_L": "64"}),
    ("pages/gradients.py", {"gr_tau": "0", "gr_lr": "inf", "gr_row": "77"}),
    ("pages/online_softmax.py", {"os_block": "0", "os_T": "999999", "os_section": "x"}),
    ("pages/online_softmax.py", {"os_dtype": "float128"}),
    ("pages/kernels.py", {"kb_d": "1e12", "kb_impls": "rm -rf", "kb_dtype": "float128"}),
    ("pages/costs.py", {"co_model": "../../etc/passwd"}),
    ("pages/costs.py", {"co_src": "paste", "co_paste": "{" * 20_000, "co_causal": "2"}),
    ("pages/costs.py", {"co_gpu": "H9000", "co_ngpu": "0", "co_dtype": "fp3"}),
    ("pages/practice.py", {"pr_card": "99", "pr_seed": "abc"}),
    ("pages/practice.py", {"pr_difficulty": "impossible"}),
]


@pytest.mark.parametrize(("page", "query"), HOSTILE_QUERIES, ids=lambda v: str(v)[:40])
def test_hostile_url_parameters_fall_back(app, page, query):
    at = app(page, **query)
    assert not at.exception, at.exception
    assert at.title[0].value  # the page rendered
    assert at.toggle(key="projector").value is False  # the shared sidebar too, at its default


# -- config.json ---------------------------------------------------------------------------------
LLAMA = json.dumps(
    {
        "model_type": "llama",
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
)
BAD_CONFIGS = {
    "empty": "",
    "not json": "hello",
    "truncated": LLAMA[:-5],
    "array": "[1, 2, 3]",
    "string": '"config"',
    "number": "42",
    "null": "null",
    "no layers": LLAMA.replace('"num_hidden_layers": 2, ', ""),
    "negative width": LLAMA.replace('"hidden_size": 64', '"hidden_size": -64'),
    "zero heads": LLAMA.replace('"num_attention_heads": 4', '"num_attention_heads": 0'),
    "bool width": LLAMA.replace('"hidden_size": 64', '"hidden_size": true'),
    "fractional layers": LLAMA.replace('"num_hidden_layers": 2', '"num_hidden_layers": 2.5'),
    "huge width": LLAMA.replace('"hidden_size": 64', '"hidden_size": 1' + "0" * 30),
    "string width": LLAMA.replace('"hidden_size": 64', '"hidden_size": "64"'),
    "NaN width": LLAMA.replace('"hidden_size": 64', '"hidden_size": NaN'),
    "Infinity vocab": LLAMA.replace('"vocab_size": 100', '"vocab_size": Infinity'),
    "width not divisible": LLAMA.replace('"hidden_size": 64', '"hidden_size": 66'),
    "kv heads not dividing": LLAMA[:-1] + ', "num_key_value_heads": 3}',
    "tie flag as string": LLAMA[:-1] + ', "tie_word_embeddings": "yes"}',
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "deeply nested object": '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "text_config not an object": '{"text_config": 7}',
}


@pytest.mark.parametrize("text", BAD_CONFIGS.values(), ids=BAD_CONFIGS.keys())
def test_a_bad_config_is_a_config_error(text):
    with pytest.raises(ConfigError) as err:
        parse_config_text(text)
    assert 0 < len(str(err.value)) < 400  # a sentence, not a dump


BAD_BYTES = {
    "binary png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "latin-1": '{"model_type": "caf\xe9"}'.encode("latin-1"),
    "utf-16": LLAMA.encode("utf-16"),
    "over the size cap": b" " * (MAX_CONFIG_BYTES + 1) + LLAMA.encode(),
    "nul bytes": b"\x00" * 1000,
}


@pytest.mark.parametrize("data", BAD_BYTES.values(), ids=BAD_BYTES.keys())
def test_bad_config_bytes_are_a_config_error(data):
    with pytest.raises(ConfigError):
        parse_config_bytes(data)


def test_the_good_config_of_the_catalogue_parses():
    """The catalogue's bad configs are one edit away from this good one."""
    shape = parse_config_text(LLAMA)
    assert (shape.n_layers, shape.d_model, shape.n_heads) == (2, 64, 4)


# -- the command line ----------------------------------------------------------------------------
BAD_ARGV = {
    "absurd T": ["cost", "--model", "llama-2-7b", "--seq-len", "1" + "0" * 30],
    "negative T": ["cost", "--model", "llama-2-7b", "--seq-len", "-1"],
    "float T": ["cost", "--model", "llama-2-7b", "--seq-len", "1.5"],
    "word T": ["cost", "--model", "llama-2-7b", "--seq-len", "many"],
    "nan T": ["cost", "--model", "llama-2-7b", "--seq-len", "nan"],
    "zero batch": ["cost", "--model", "llama-2-7b", "--seq-len", "8", "--batch", "0"],
    "absurd batch": ["cost", "--model", "llama-2-7b", "--seq-len", "8", "--batch", "9" * 40],
    "unknown model": ["cost", "--model", "gpt-9", "--seq-len", "8"],
    "path as model": ["cost", "--model", "../../etc/passwd", "--seq-len", "8"],
    "unknown gpu": ["cost", "--model", "llama-2-7b", "--seq-len", "8", "--gpu", "H9000"],
    "zero gpus": ["cost", "--model", "llama-2-7b", "--seq-len", "8", "--gpu", "A100-80GB", "--n-gpus", "0"],
    "no source": ["cost", "--seq-len", "8"],
    "missing config file": ["cost", "--config", "/nonexistent/config.json", "--seq-len", "8"],
    "directory as config": ["cost", "--config", "/", "--seq-len", "8"],
    "binary config": ["cost", "--config", "/bin/sh", "--seq-len", "8"],
    "unknown subcommand": ["explode"],
}


@pytest.mark.parametrize("argv", BAD_ARGV.values(), ids=BAD_ARGV.keys())
def test_bad_command_lines_are_usage_errors(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(argv)
    assert status == 2
    assert "Traceback" not in err.getvalue()
    assert err.getvalue().startswith("python -m attn_core: error: ") and err.getvalue().count("\n") == 1


# -- sizes whose products overflow 64-bit integers -------------------------------------------------
def test_extreme_sizes_are_exact_python_integers():
    """At the caps (T = 2^24, B = 65,536) a 70B model's cache and attention FLOPs pass 2^63: the
    report must hold exact integers (numpy int64 would wrap to negative numbers)."""
    from attn_core.cost.inputs import Workload
    from attn_core.cost.limits import MAX_BATCH, MAX_SEQ_LEN
    from attn_core.cost.report import cost_report

    shape = load_preset("llama-2-70b")
    report = cost_report(shape, Workload(MAX_SEQ_LEN, MAX_BATCH)).to_json()
    L, h_kv, d_h = shape.n_layers, shape.n_kv_heads, shape.head_dim
    assert report["kv_cache_bytes"] == 2 * L * h_kv * d_h * 2 * MAX_SEQ_LEN * MAX_BATCH  # fp16, card 12
    big = [v for v in report.values() if isinstance(v, int) and v > 2**63]
    assert big, "the caps are chosen to pass 2^63: this test must see a value beyond int64"
    assert all(v >= 0 for v in report.values() if isinstance(v, int | float))
