"""What the serving benchmarks and the tests that drive a real server share.

- ``ports``: free loopback ports (one, or a run of consecutive ones);
- ``server``: one ``streamlit run app.py`` (``serve``), or the lecture-hall stack of replicas,
  nginx and Redis that deploy/serve.sh starts (``serve_stack``); both always stopped;
- ``meter``: CPU seconds and resident memory of processes, from /proc;
- ``client``: a websocket client that speaks Streamlit's protocol as one browser tab does;
- ``load``: N simulated students on a server or a stack, timed (benchmarks/serve_load.py prints it).
- ``room_client``: one tab in a classroom room (the presenter's frame read, the polling fragment);
- ``room``: a presenter and its followers, timed, with how long a follower's view was stale
  (benchmarks/follow_load.py prints it).

Scripts run as ``python benchmarks/<script>.py`` import it as ``harness`` (their folder is on
sys.path); pytest's ``pythonpath`` setting in pyproject.toml does the same for the tests.
"""
