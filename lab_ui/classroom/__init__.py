"""The classroom: a presenter's screen that students' screens follow (README, "Students follow
your screen").

- ``rooms``: the rooms themselves, in memory or in Redis shared by replicas (no Streamlit): create,
  publish, follow, presence, seats, limits, all atomic in Redis.
- ``push``: wakes a room's followers in this server process the moment its presenter publishes.
- ``follow``: the sidebar's Classroom box and what every page run does before and after the page:
  the presenter publishes its view, a follower takes the presenter's.
"""
