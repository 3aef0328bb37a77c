"""The classroom: a presenter's screen that students' screens follow (README, "Students follow
your screen").

- ``rooms``: the rooms themselves, in memory or in Redis shared by replicas (no Streamlit): create,
  publish, follow, presence, seats, limits, all atomic in Redis.
- ``frames``: the presenter's page as drawn, recorded once per change and shown on followers'
  screens without running the page.
- ``push``: brings a room's followers in this server process up to date the moment its presenter
  publishes: the new frame straight to their screens, or a rerun.
- ``follow``: the sidebar's Classroom box and what every page run does before and after the page:
  the presenter publishes its view and its frame, a follower shows the frame (or takes the view
  and runs the page).
"""
