"""Every registered page, at its defaults, through AppTest: it runs inside app.py (shared sidebar),
raises nothing, and shows no error."""

import pytest

from lab_ui.nav import HOME, PAGES


@pytest.mark.parametrize("info", [HOME, *PAGES], ids=lambda p: p.url_path)
def test_page_runs_inside_the_app_at_defaults(app, info):
    at = app(info.path)
    assert not at.exception, at.exception
    assert at.error.len == 0, [e.value for e in at.error]
    # The projector toggle lives in app.py: seeing it proves the page ran through st.navigation
    # (lab_ui.page.header routes it there).
    assert at.toggle(key="projector").label == "Projector mode"
    assert at.title[0].value == ("Attention Lab" if info is HOME else info.title)
