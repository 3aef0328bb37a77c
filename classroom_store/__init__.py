"""The classroom's rooms, without Streamlit (README, "Students follow your screen"): the data a
presenter's room keeps and the stores that keep it, each tested on its own. lab_ui.classroom (the
screens) drives them; this package never imports streamlit, plotly or lab_ui (tests/test_layers.py).

- ``rooms``: the interface every store keeps and the process's store (`store()`), in memory or in
  Redis shared by replicas;
- ``records``: what a store answers (`Snapshot`, `Status`, `Seat`), its errors and limits;
- ``signing``: presenter secrets;
- ``question``: a room's live question and its answers' checks;
- ``memory_rooms``: the store in this process's memory; ``redis_rooms``: the store in Redis
  (+ ``redis_scripts``, its Lua, every cap atomic in Redis).
"""
