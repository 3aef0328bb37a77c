"""Nothing a browser sends can run code or inject markup; the server's guards are on.

The scans read every Python file the app serves (app.py, pages/, lab_ui/, classroom_store/,
attn_core/) as a syntax tree, so a new page or module is covered the day it is added."""

from __future__ import annotations

import ast
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVED = sorted(
    [
        ROOT / "app.py",
        *(p for d in ("pages", "lab_ui", "classroom_store", "attn_core") for p in (ROOT / d).rglob("*.py")),
    ]
)
CONFIG = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())


def _calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            yield node


def _name(func: ast.expr) -> str:
    """'eval', 'pickle.loads', 'st.markdown', 'torch.load', … (the dotted call target)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    parts.append(func.id if isinstance(func, ast.Name) else "?")  # "?.eval": a method of a value
    return ".".join(reversed(parts))


def test_the_scan_sees_the_whole_app():
    names = {p.relative_to(ROOT).as_posix() for p in SERVED}
    assert {
        "app.py",
        "pages/playground.py",
        "lab_ui/widgets.py",
        "classroom_store/rooms.py",
        "attn_core/attention.py",
    } <= names
    assert len(SERVED) > 60


@pytest.mark.parametrize("path", SERVED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_code_execution_or_unpickling(path):
    for call in _calls(path):
        name = _name(call.func)
        assert name not in {"eval", "exec", "compile", "__import__"}, (
            f"{path.name}:{call.lineno} calls {name}"
        )
        assert not name.startswith(("pickle.", "marshal.", "shelve.", "dill.")), f"{path.name}:{call.lineno}"
        assert name not in {"yaml.load", "yaml.unsafe_load", "os.system"}, f"{path.name}:{call.lineno}"
        if name in {"torch.load", "load"} and any(k.arg == "weights_only" for k in call.keywords):
            kw = next(k for k in call.keywords if k.arg == "weights_only")
            assert isinstance(kw.value, ast.Constant) and kw.value.value is True, f"{path.name}:{call.lineno}"
        elif name == "torch.load":
            pytest.fail(f"{path.name}:{call.lineno}: torch.load without weights_only=True unpickles")
        if name.endswith("AutoModelForCausalLM.from_pretrained"):  # weights: safetensors (or GGUF) only
            kw = {k.arg: k.value for k in call.keywords}
            gguf = "gguf_file" in kw  # a GGUF file holds tensors and metadata, no code to unpickle
            assert gguf or (
                isinstance(kw.get("use_safetensors"), ast.Constant) and kw["use_safetensors"].value is True
            )
            assert "trust_remote_code" not in kw, f"{path.name}:{call.lineno}: remote code"
        for kw in call.keywords:
            if kw.arg == "shell":
                assert isinstance(kw.value, ast.Constant) and kw.value.value is False, (
                    f"{path.name}:{call.lineno}"
                )


@pytest.mark.parametrize("path", SERVED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_raw_html_only_from_constants(path):
    """unsafe_allow_html (and st.html) may only ever show text written in the source: no
    f-string, variable or call can bring a user's text into raw HTML."""
    for call in _calls(path):
        raw = any(
            k.arg == "unsafe_allow_html" and not (isinstance(k.value, ast.Constant) and not k.value.value)
            for k in call.keywords
        ) or _name(call.func) in {"st.html", "components.html"}
        if raw:
            consts = _module_constants(path)
            assert call.args and all(_constant_text(a, consts) for a in call.args), (
                f"{path.name}:{call.lineno}: raw HTML built from something that is not a constant"
            )


def _constant_text(node: ast.AST, consts: set[str]) -> bool:
    """Text written in the source: literals, a module constant built only of literals, and those
    joined with + or a literal's ``.join`` (no call, attribute or argument can bring a user's text in)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in consts
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_constant_text(e, consts) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _constant_text(node.left, consts) and _constant_text(node.right, consts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        joiner = node.func.value
        return (
            isinstance(joiner, ast.Constant) and len(node.args) == 1 and _constant_text(node.args[0], consts)
        )
    return False


def _module_constants(path) -> set[str]:
    """Names assigned once at module level to text written in the source (in order, so a constant
    may be built of earlier ones)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assigned = [
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    ]
    consts: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if assigned.count(name) == 1 and _constant_text(node.value, consts):
                consts.add(name)
    return consts


def test_server_guards_are_on_in_the_config():
    server = CONFIG["server"]
    assert server["enableXsrfProtection"] is True
    assert server["enableCORS"] is True
    assert server["maxUploadSize"] == 1  # MiB: the only upload is a config.json
    assert server["maxMessageSize"] <= 50  # MiB a websocket message may carry
    assert server["address"] == "127.0.0.1"  # behind nginx, never on every interface by default


def test_the_streamlit_loader_reads_those_values(monkeypatch):
    """The config file is the one Streamlit uses (not a look-alike that it ignores)."""
    from streamlit import config

    monkeypatch.chdir(ROOT)
    config._config_options = None
    try:
        config.get_config_options(force_reparse=True)
        assert config.get_option("server.enableXsrfProtection") is True
        assert config.get_option("server.maxUploadSize") == 1
    finally:
        config.get_config_options(force_reparse=True)


def test_xsrf_blocks_an_upload_without_the_token(server_url):
    """A cross-site form cannot post a file: the live server refuses an upload that lacks the
    XSRF cookie and header (Tornado's check), whatever the session id."""
    request = urllib.request.Request(
        f"{server_url}/_stcore/upload_file/some-session/some-file",
        data=b"--x\r\nContent-Disposition: form-data; name=file; filename=c.json\r\n\r\n{}\r\n--x--\r\n",
        method="PUT",
        headers={"Content-Type": "multipart/form-data; boundary=x", "Origin": "https://evil.example"},
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    assert err.value.code == 403


def test_the_constant_rule_refuses_text_that_could_come_from_a_user():
    consts = {"CSS"}
    refused = [
        "f'<b>{name}</b>'",
        "name",
        "'<b>' + name",
        "', '.join(names)",
        "render(name)",
        "CSS.format(x)",
    ]
    allowed = ["'<style></style>'", "CSS", "'<a>' + CSS", "', '.join(('a', 'b'))"]
    assert not any(_constant_text(ast.parse(src, mode="eval").body, consts) for src in refused)
    assert all(_constant_text(ast.parse(src, mode="eval").body, consts) for src in allowed)
