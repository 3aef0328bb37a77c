"""Practice: every card of the spec as an endless drill, its answer checked live.

One generator per card draws fresh numbers, calls the card's own attn_core function for the
answer and for each recognisable slip, and writes the worked steps (`question.py`, `cards_*.py`).
`answers.py` reads typed answers (numbers with units, vectors, matrices); `drills.py` is the
registry of drills; `progress.py` keeps a learner's record as CSV.
"""
