"""``python -m attn_core cost --config PATH …`` with the formulas checked against transformers'
own build (imports torch; ``--analytic-only`` skips it and stays in `attn_core.cost.cli`).

The analytic report reads the config as transformers completes it (a key the config leaves out
means what its class means) with the facts its build shows, then the check follows: agreement, or each part that differs
with both figures. Where the formulas do not cover the architecture, the model-derived figures
are the answer (parameters by part, cache per token, fixed state, the cache at T × B). Only
where transformers cannot build the model either is the config refused (one line, exit 2,
naming transformers' reason beside the formulas')."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from attn_core.cost.cli import UsageError, build_parser, fail, gpu_of, precision_of
from attn_core.cost.cli import _run as analytic_run
from attn_core.cost.config_keys import ConfigError, read_mtp_layers
from attn_core.cost.config_reader import MAX_CONFIG_BYTES, parse_config_text, read_config_json
from attn_core.cost.derived_records import NO_TYPE, build_answer, build_headline, buildable_type, mtp_answer
from attn_core.cost.model_types import declared_type, unwrap_text_config
from attn_core.cost.params import model_params
from attn_core.cost.units import format_bytes, format_count_short


def mtp_of_build(config, a) -> tuple[int, int | None]:
    """(MTP layers the config declares as transformers completes it — its class's default where
    the file names none, GLM-4.5's one —, one's parameters from the build): transformers' MtpLayer,
    a 2d × d map and three d-wide RMS norms around a decoder layer like the build's last (that
    layer's parameters as built). (0, None) where none is declared; None where d is not read."""
    from attn_core.anatomy.build import completed_config

    try:
        text = unwrap_text_config(config) | completed_config(config)
        n = read_mtp_layers(text)
    except Exception:  # an MTP key the class or the reader rejects: the build's answer stands without it
        return 0, None
    d = text.get("hidden_size")
    last = [g for g in a.groups if a.n_layers - 1 in g.layers]
    if not n or not isinstance(d, int) or isinstance(d, bool) or not last:
        return n, None
    return n, 2 * d * d + 3 * d + sum(last[0].params.values())


def mtp_line(n: int, one: int | None, where: str) -> str:
    """The MTP layers in one line: how many, one's size, and that the counts above leave them out."""
    size = "not sized" if one is None else f"{one:,} parameters each ({format_count_short(one, 2)}; {where})"
    return (
        f"  next-token prediction (MTP): {n} layer(s) the config declares, {size}, left out of the "
        "counts above: transformers builds them beside the model, not in it"
    )


def layer_label(g) -> str:
    """A layer group by its mixers' classes and what its feed-forward is (the part that tells an MoE
    layer from a dense one when the mixers are the same)."""
    p = g.params
    ffn = "routed experts" if p.get("routed experts") else "dense MLP" if p.get("mlp") else None
    return f"{g.kind} + {ffn}" if ffn else g.kind


def derived_text(check, T: int, batch: int, name: str, mtp: tuple[int, int | None] = (0, None)) -> str:
    """The model-derived answer where the formulas do not cover the model."""
    a = check.anatomy
    emb = a.params_by_part.get("embeddings", 0)
    lines = [
        build_kind_line(a),
        f"{name}: {a.model_type}, built by transformers {a.transformers_version} as {a.built_class} "
        f"(meta device), {a.n_layers} layers",
        f"the formulas do not cover this model ({check.analytic_error}): every figure below is "
        "from transformers' build",
        "",
        f"Parameters  total {a.params_total:,} ({format_count_short(a.params_total, 2)}), active per token "
        f"{a.params_active:,} ({format_count_short(a.params_active, 2)}) with the input embeddings; "
        f"{format_count_short(a.params_active - emb, 2)} without them (the gpt-oss model card's convention)",
        *(f"  {part:<16}{n:>22,}" for part, n in a.params_by_part.items()),
        *([mtp_line(*mtp, "the build's last layer + a 2d × d map + three norms")] if mtp[0] else []),
        "Layers",
        *(
            f"  {g.count:>4} × {layer_label(g)}: {sum(g.params.values()):,} parameters each, cache "
            f"{g.cache.per_token:,} B per token"
            + (f" (window {g.cache.window:,})" if g.cache.window else "")
            + (f", fixed {g.cache.fixed:,} B per sequence" if g.cache.fixed else "")
            for g in a.groups
        ),
    ]
    if a.cache_unread:
        lines.append(f"Cache: not read ({a.cache_unread})")
    elif a.cache_absent:
        lines.append(f"Cache: none ({a.cache_absent})")
    else:
        at_T = a.cache_bytes(T, batch)
        lines += [
            "Cache (bf16, transformers' dynamic cache: a sliding layer keeps W − 1 tokens)",
            f"  per token                 {a.cache_bytes_per_token:>22,} B  {format_bytes(a.cache_bytes_per_token)}",
            f"  fixed state per sequence  {a.fixed_state_bytes:>22,} B  {format_bytes(a.fixed_state_bytes)}",
            f"  at T = {T:,}, B = {batch:,}  {at_T:>22,} B  {format_bytes(at_T)}",
        ]
    return "\n".join(lines)


# a forward that fails on a tensor shape: the config's sizes do not fit together (heads that do not
# divide), whatever the device; other failures (a kernel, an input it wants) leave the sizes standing
_SHAPE_FAILURE = re.compile(
    r"size of tensor|broadcast|shape|mat1 and mat2|divisible|cannot be multiplied", re.I
)


def cannot_run(a) -> str | None:
    """transformers' reason where its build cannot run this config: the forward fails on a tensor
    shape both on the meta device and on a reduced copy with real weights (attn_core/anatomy/derive)."""
    why = a.cache_unread or ""
    both = why.startswith("on meta: transformers' forward fails") and why.count("forward fails") >= 2
    return why.removeprefix("on meta: ") if both and _SHAPE_FAILURE.search(why) else None


def build_kind_line(a) -> str:
    """What kind of model the build is: dense, MoE (k of E), or a hybrid naming its layers' mixers."""
    from collections import Counter

    kinds: Counter = Counter()
    for g in a.groups:
        ffn = "MoE feed-forward" if g.params.get("routed experts") else "feed-forward"
        kinds[ffn if g.kind == "feed-forward only" else g.kind] += g.count
    moe = (
        f"mixture of experts, {a.experts[0]} of {a.experts[1]} routed experts per token" if a.experts else ""
    )
    if len(kinds) > 1:
        layers = " + ".join(f"{n} × {k}" for k, n in kinds.items())
        return f"Kind (transformers' build): hybrid, {layers}" + (f"; {moe}" if moe else "")
    if moe:
        return f"Kind (transformers' build): transformer, {moe}"
    return f"Kind (transformers' build): dense, every layer {next(iter(kinds), 'alike')}"


def _buffers(check) -> str:
    """The numbers a checkpoint holds as persistent buffers beside the parameters (DeepSeek-V3's
    router score-correction bias); where the formulas count them as parameters, said so, so their
    larger total below reads as this and nothing else."""
    n = check.anatomy.checkpoint_buffers
    if not n:
        return ""
    counted = check.shape is not None and model_params(check.shape).total == check.anatomy.params_total + n
    return f" + {n:,} held as buffers" + (" (the formulas below count them as parameters)" if counted else "")


def headline_lines(check, T: int, batch: int) -> list[str]:
    """The headline figures from transformers' build (parameters, active under both conventions,
    cache per token, fixed state, the cache at T × B), and which of the formulas' figures below
    differ: where the build runs, its figures are the answer and the formulas the explanation."""
    a = check.anatomy
    emb = a.params_by_part.get("embeddings", 0)
    k_of_e = f" (k of E = {a.experts[0]} of {a.experts[1]})" if a.experts else ""
    lines = [
        f"Headline, from transformers' build ({a.built_class}, meta device); the formulas' reading follows as the explanation",
        f"  parameters        {a.params_total:>22,}  {format_count_short(a.params_total, 2)}{_buffers(check)}",
        f"  active per token  {a.params_active:>22,}  {format_count_short(a.params_active, 2)} with the input "
        f"embeddings{k_of_e}; {format_count_short(a.params_active - emb, 2)} without them (the gpt-oss model "
        "card's convention)",
    ]
    if not (a.cache_unread or a.cache_absent):
        at_T = a.cache_bytes(T, batch)
        lines.append(
            f"  cache per token   {a.cache_bytes_per_token:>22,} B  bf16, as transformers' cache holds it"
        )
        if a.fixed_state_bytes:
            lines.append(
                f"  fixed state       {a.fixed_state_bytes:>22,} B  per sequence (recurrent state fp32, as transformers keeps it)"
            )
        lines.append(f"  cache at T = {T:,}, B = {batch:,}: {at_T:,} B  {format_bytes(at_T)}")
    misread = sorted({d.what.split(":")[0] for d in check.misreads if not d.what.startswith("FLOPs")})
    if misread:
        lines.append(
            f"  the formulas below differ from the build on: {'; '.join(misread)} (see the check at the end)"
        )
    return lines


def _config_text(args) -> str:
    """The file's text, with the analytic reader's checks (missing, unreadable, too large, not UTF-8)."""
    path = args.config
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file")
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--config {path}: cannot read it ({exc.__class__.__name__})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(f"--config {path}: {len(data):,} bytes is larger than 1 MiB: not a config.json")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"--config {path}: not UTF-8 text: a config.json is a JSON text file") from None


def run(args) -> str:
    text = _config_text(args)
    try:
        config = read_config_json(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--config {args.config}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if isinstance(config, dict):  # remote code declaring a transformers architecture: built as that type
        config, declared = declared_type(config)
    else:
        declared = None
    try:
        parse_config_text(text)
        analytic_error = None
    except (ConfigError, RecursionError) as exc:  # the formulas do not read it; the build may
        analytic_error = str(exc) or "nested too deeply"
    # a bad flag (--n-gpus without --gpu, …) is the user's to fix whatever reads the config
    analytic = None if analytic_error else analytic_run(args)
    if buildable_type(config) is None:  # nothing transformers could build: no torch imported
        if analytic is None:
            raise UsageError(f"--config {args.config}: {analytic_error}; transformers: {NO_TYPE}")
        note = f"Not checked against transformers' build: {NO_TYPE}"
        return (
            json.dumps(json.loads(analytic) | {"model_check": None}, indent=2)  # sized_by: formulas
            if args.json
            else f"{analytic}\n\n{note}"
        )
    from attn_core.anatomy.compare import Check, compare_config  # torch and transformers from here

    check = compare_config(config)
    if check.anatomy is not None and (why := cannot_run(check.anatomy)):
        raise UsageError(f"--config {args.config}: transformers builds it but cannot run it: {why}")
    if check.shape is not None:  # the config as transformers completes it, the build's facts
        analytic = analytic_run(args, check.shape)
    if analytic is None and check.anatomy is None:
        raise UsageError(f"--config {args.config}: {analytic_error}; transformers: {check.refused}")
    if analytic is None:
        check = Check(check.anatomy, None, check.analytic_error or analytic_error, ())
    if args.json:
        return _json_answer(config, analytic, check, args)
    if analytic is None:
        name = str(config.get("_name_or_path") or config.get("model_type"))
        text = derived_text(check, args.seq_len, args.batch, name, mtp_of_build(config, check.anatomy))
        text += "".join(f"\n{line}" for line in _gpu_lines(args, check.anatomy))
        towers = "\n".join(_towers(config, check))
        return text + (f"\n{towers}" if towers else "")
    if declared:
        head, _, rest = analytic.partition("\n")
        analytic = f"{head}\n{declared}\n{rest}"
    if check.anatomy is not None:
        _, _, rest = analytic.partition("\n")  # the formulas' kind line: the build's says it instead
        analytic = "\n".join(
            [build_kind_line(check.anatomy), *headline_lines(check, args.seq_len, args.batch), "", rest]
        )
    towers = "\n".join(_towers(config, check))
    return analytic + (f"\n{towers}" if towers else "") + "\n\n" + "\n".join(check.lines())


def _gpu_lines(args, anatomy) -> list[str]:
    """The build's answer on ``--gpu`` (`attn_core.anatomy.gpu_text`); none without one."""
    gpu = gpu_of(args)
    if gpu is None:
        return []
    from attn_core.anatomy.gpu_text import gpu_lines, on_gpu

    try:
        return gpu_lines(on_gpu(anatomy.to_json(), gpu, args.n_gpus, precision_of(args), args.seq_len))
    except ValueError as exc:  # a compute format the GPU has no peak for: one line, exit 2
        raise UsageError(str(exc)) from None


def _dtypes_asked(args) -> tuple[int, bool]:
    """(bytes per cached value, whether the state's dtype was set): what `build_headline` needs."""
    return precision_of(args).b_kv, args.state_dtype is not None


def _json_answer(config, analytic: str | None, check, args) -> str:
    """One JSON shape (ANSWER_KEYS, ``sized_by``): the formulas' report where they read the config (as
    transformers completes it) with the build's figures as its headline (`build_headline`), else the
    build's figures alone; the comparison and the towers beside."""
    record = check.to_json()
    body = (
        build_headline(
            json.loads(analytic),
            record,
            args.seq_len,
            args.batch,
            *_dtypes_asked(args),
            mtp_answer(*mtp_of_build(config, check.anatomy)) if check.anatomy is not None else None,
        )
        if analytic is not None
        else {"model": str(config.get("model_type"))}
        | build_answer(
            record["model_derived"],
            args.seq_len,
            args.batch,
            mtp_answer(*mtp_of_build(config, check.anatomy)),
        )
    )
    return json.dumps(body | {"model_check": record, "towers": _tower_json(config)}, indent=2)


def _tower_json(config) -> dict:
    """Parameters per tower ({} for a text-only config), or why they are not sized."""
    from attn_core.anatomy.build import BuildRefused
    from attn_core.anatomy.towers import tower_params

    try:
        return tower_params(config)
    except BuildRefused as exc:
        return {"not_sized": str(exc)}


def _towers(config, check) -> list[str]:
    """Vision / audio towers and projector beside the text model, or why they are not sized."""
    from attn_core.anatomy.build import BuildRefused
    from attn_core.anatomy.towers import tower_lines, tower_params

    try:
        towers = tower_params(config)
    except BuildRefused as exc:
        return [f"Towers beside the text model: not sized ({exc})"]
    return tower_lines(towers, None if check.anatomy is None else check.anatomy.params_total)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``cost --config`` with the check; returns the exit status (0 ok, 2 refused)."""
    try:
        args = build_parser().parse_args(argv)
        text = run(args)
    except (UsageError, ConfigError, ValueError) as exc:
        return fail(str(exc))
    except Exception as exc:  # one line, never a traceback
        return fail(f"cannot size it ({exc.__class__.__name__})")
    print(text)
    return 0
