"""One module per page: everything that page shows, computed in one call from the user's inputs.

No streamlit, no plotly: a page reads its widgets, calls its module here once, and draws what
comes back. Verdicts, tolerances and comparisons are decided here, not in the page.
"""
