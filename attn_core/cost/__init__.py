"""The cost model: what attention costs for a real model, numpy only (never torch). It imports
nothing else of attn_core, so ``python -m attn_core cost …`` stays fast. It re-exports nothing:
import each name from the module that defines it. Its modules, by job:

Inputs and caps
- `inputs`: the what-if as three frozen objects, validated once — Hardware, Precision, Workload.
- `limits`: every cap in one place (2²⁴ for T and any size read from a config; batch, GPUs, N).
- `dtypes`: bytes per number (activation and cache dtypes, quantized weight formats) and token
  counts as exact ints or float64 sweeps.
- `gpus`: the GPU presets (memory as the device reports it and as the vendor labels it).
- `units`: numbers with their units (GiB vs GB, FLOPs, seconds, counts).

Reading a config
- `config_reader`: a `ModelShape` from a preset or a Hugging Face config.json (the key aliases read,
  uploads and pastes parsed).
- `model_shape`: the `ModelShape` dataclass, validated on construction, every derived quantity.
- `config_keys`: reading one key safely (aliases, whole numbers, `ConfigError` naming the key).
- `families`: one home per model family — what a model_type means beyond its keys (class
  defaults, expert layout, layer rule, extra width keys, norm, window rule, sinks), one record each.
- `model_types`: before any size is read: text_config, remote-code types, class defaults filled in,
  refused types, quantization.
- `type_facts`: what transformers' build of each model_type shows (MLP kind, biases, norms, …), recorded.
- `layer_config`: each layer's kind and the linear-attention / state-space mixer, from the config.
- `experts`: mixture of experts (layout, top-k, shared experts, which layers hold experts).
- `mla`: multi-head latent attention (ranks and head widths).
- `layers`: layer patterns as rules and lists, counted without visiting every layer.
- `mixers`: Gated DeltaNet, KDA, Mamba and Mamba-2: parameters, FLOPs, state per sequence.

Costs
- `params`: parameters total and active, and their bytes at a weight dtype (card 9).
- `flops`: FLOPs per layer and for the whole model, the crossover T* (card 11).
- `score_memory`: score memory, naive vs online softmax (card 12).
- `serving`: the KV cache, a hybrid's fixed state, sequences that fit (cards 13, 14).
- `ledger`: the ledger by layer kind, and a hybrid's memory against T beside its all-attention twin.
- `phases`: the one count of each phase's work (prefill of P, a decode step at P): FLOPs by part, bytes.
- `roofline`: the one pricing of a count (`time_phase`): the bound, the estimate at η, the time at a
  kernel bench run's attained rates.
- `whole_model`: parameters with published counts, and the time bounds (TTFT, decode, end to end).
- `report`: one what-if, everything at once (`cost_report`), the MHA/GQA/MQA variants and sweeps over T.
- `cli`: the command line (``python -m attn_core cost|models|gpus``).
"""
