"""Shared Streamlit helpers for Attention Lab's pages (the only package that imports streamlit
besides app.py and the pages). attn_core never imports this."""
