"""The classroom: a presenter's screen that students' screens follow (README, "Students follow
your screen").

The rooms (no Streamlit):
- ``rooms``: the interface every store keeps and the process's store (`store()`), in memory or in
  Redis shared by replicas; ``records``: what a store answers, its errors and limits;
  ``signing``: presenter secrets; ``question``: a room's live question and its answers' checks;
  ``memory_rooms``, ``redis_rooms`` (+ ``redis_scripts``, its Lua, every cap atomic in Redis).

The screens:
- ``frames``: the presenter's page as drawn, recorded once per change and shown on followers'
  screens without running the page.
- ``push``: brings a room's followers in this server process up to date the moment its presenter
  publishes: the new frame straight to their screens, or a rerun.
- ``follow``: what app.py calls — before and after the page, and the sidebar's Classroom box;
  ``session``: what a screen's session keeps of its room; ``join``: joining from a link (and the
  presenter taking its room back); ``publish``: the presenter publishes its view and its frame and
  checks in; ``following``: a follower shows the frame (or takes the view and runs the page),
  takes control and rejoins; ``poll``: the follower's poll.
- ``ask``: a live question: ask, answer, the live count.
"""
