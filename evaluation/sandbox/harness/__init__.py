"""Hand-written on purpose, no third-party library: it runs inside every sandbox, whose Python has only pytest.

The in-sandbox harness. Standard library only: it runs inside the sandbox
image, which holds Python and pytest and nothing of the platform's own.

Processes inside one sandbox:
- the supervisor (supervisor.py), which is also the judge (judge.py): it reads
  each run's tests, runs them and compares results; it is the only process that
  holds expected values, and it is never forked from;
- the zygote (zygote.py), forked from the supervisor at start-up before anything
  is read: it never runs solution code and never reads a test; it forks a
  pristine solution process whenever the judge asks for one, and wipes the
  scratch (scratch.py) after each run;
- the solution (solution.py): loads the candidate and answers the judge's calls
  with plain data (codec.py) over a socket.

The judge's parts: the remote-call protocol (remote.py), output capture
(capture.py), the scope tests run in (scope.py), outcomes and the run's record
(outcomes.py), and one module per suite kind (suite_*.py). Resource limits and
accounting: resources.py.

The harness talks to the C modules beneath json, socket and threading (lite.py):
a cold sandbox pays for every import before the candidate runs.
"""
