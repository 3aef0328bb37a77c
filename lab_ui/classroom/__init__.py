"""The classroom's screens: a presenter's screen that students' screens follow (README, "Students
follow your screen"). The rooms they publish to and read from are classroom_store's (no Streamlit).

- ``app_hooks``: what app.py calls — before and after the page, and the sidebar's Classroom box;
- ``session``: what a screen's session keeps of its room; ``join``: joining from a link (and the
  presenter taking its room back);
- ``frames``: the presenter's page as drawn, recorded once per change and shown on followers'
  screens without running the page;
- ``presenter_screen``: the presenter publishes its view and its frame and checks in;
- ``follower_screen``: a follower shows the frame (or takes the view and runs the page), takes
  control and rejoins; ``follower_poll``: the follower's poll;
- ``change_push``: brings a room's followers in this server process up to date the moment its
  presenter publishes: the new frame straight to their screens, or a rerun;
- ``ask``: a live question: ask, answer, the live count.
"""
