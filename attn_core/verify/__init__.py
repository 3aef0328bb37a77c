"""The cost model checked against a real run on this machine (`python -m attn_core verify`): a
model's layers built at their true shapes with random weights, a prefill and decode steps timed,
beside the roofline bound and a calibrated estimate. The method: `run`'s docstring.

No names are re-exported here: import each from its module.

Its modules, by job (each imports only those above it):

- `hf`: transformers' own build: the config cut to the planned layers and experts, its weights
  counted on the meta device for the plan, the build and its timed forward.
- `peak`: the planned peak of a check (probe buffers, weights, cache, activations, expert
  modules, scan intermediates) and the caps on what one check builds (experts, scan chunks,
  B·T × width).
- `plan`: the request (`VerifyRequest`), `select_device`, and `plan_build`: the first layers (and
  routed experts) whose planned peak fits the memory cap.
- `counts`: the cost model's FLOPs and bytes of what was built, each phase's matrix products
  (``MIXER_GEMMS``) and mixer calls.
- `linear`: what the linear layers share: their state, the causal conv, the transformers modules
  whose torch fallbacks are their cores.
- `deltanet`, `mamba2`: the Gated DeltaNet and Mamba-2 layers, each with its core alone for the
  probe.
- `layers`: the torch layers (``ATTENTION_KEYS``, attention, MLP, mixture of experts, ``MIXERS``)
  and `build_layers`.
- `probe`: the device's rates at those shapes, the clock, and `bound_ms` / `estimate_ms`.
- `run`: the timed prefills and decode steps, the result and its JSON, `verify`, and
  `expected_seconds` (a generous guess shown before a check runs).
- `examples`: tiny configs of each kind a check builds, shared by the tests and benchmarks.
- `wire`: the child's pipe as JSON (the job and the result, dataclasses to and from dicts).
- `child`: `start_check`, the one runner: a check in a child process capped at its planned peak
  and a wall-clock limit, stoppable, every failure one line (`CheckFailed`).
- `model_read`: a model the formulas do not read but transformers builds: its counts from the
  model itself (``counts_by`` "model").
- `cli`: ``python -m attn_core verify``: the arguments, the check in its child, the printout and JSON.
"""
