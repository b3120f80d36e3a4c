"""The in-sandbox harness. Standard library only: it runs inside the sandbox
image, which holds Python and pytest and nothing of the platform's own.

Processes inside one sandbox:
- the agent (agent.py): a warm, pre-imported interpreter that never runs
  solution code and never reads a test; it forks the other two per run;
- the judge (judge.py), forked per run: reads the tests, runs them, and
  compares results; it is the only process that holds expected values;
- the solution (solution.py), forked per run from the pristine agent (so it
  inherits no test): loads the candidate and answers the judge's calls with
  plain data (codec.py) over a socket.
"""
